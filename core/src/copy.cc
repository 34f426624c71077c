#include <tide/core/copy.h>

#include <cstring>

#ifdef TIDE_HAVE_CUDA
#include "cuda/cuda_runtime.h"
#endif

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
#ifdef TIDE_HAVE_CUDA
  if (!ctx.native_stream)
    throw DeviceError("a copy between " + src_dev.str() + " and " + dst_dev.str() + " must run on a GPU's stream");
  cuda_backend::copy(ctx.native_stream, dst_dev, dst, src_dev, src, nbytes);
#else
  (void)ctx;
  throw DeviceError("a copy between " + src_dev.str() + " and " + dst_dev.str() +
                    " needs the CUDA backend, which this build lacks");
#endif
}

}  // namespace tide
