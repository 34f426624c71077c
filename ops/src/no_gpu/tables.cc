// The CUDA tables of a build without the CUDA backend: every entry is null,
// so an op asked to run on a CUDA device throws a DeviceError on the
// frontend (kernels::kernel_for) instead of pushing anything.
#include "../kernels.h"

namespace tide::kernels {

const Elementwise cuda_elementwise{};
const Creation cuda_creation{};
const Reduction cuda_reduction{};
const Linalg cuda_linalg{};
const Nn cuda_nn{};
const Optim cuda_optim{};

}  // namespace tide::kernels
