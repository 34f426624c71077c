// NVTX ranges around ops (backend.h), from the toolkit's header-only nvtx3:
// a range costs a check of one function pointer unless a tool (Nsight
// Systems, Nsight Compute) has attached, which then records the names.
#include <nvtx3/nvToolsExt.h>

#include "../backend.h"

namespace tide::backend {

void range_push(const char* name) noexcept { nvtxRangePushA(name); }
void range_pop() noexcept { nvtxRangePop(); }

}  // namespace tide::backend
