#include <tide/core/copy.h>

#include <cstring>

#include "backend.h"

namespace tide {

Device copy_device(Device dst, Device src) {
  if (src.is_cuda() && (dst.is_cpu() || dst.index != src.index)) return src;
  return dst;
}

void copy_bytes(const OpContext& ctx, Device dst_dev, void* dst, Device src_dev, const void* src,
                std::size_t nbytes) {
  if (nbytes == 0) return;
  if (dst_dev.is_cpu() && src_dev.is_cpu()) {
    std::memmove(dst, src, nbytes);
    return;
  }
  backend::copy(ctx.native_stream, dst_dev, dst, src_dev, src, nbytes);
}

}  // namespace tide
