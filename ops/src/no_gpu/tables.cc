// The CUDA tables of a build without the CUDA backend: every entry is null,
// so an op asked to run on a CUDA device throws a DeviceError on the
// frontend (kernels::kernel_for) instead of pushing anything.
#include "../kernels.h"

namespace tide::kernels {

namespace {
const Elementwise no_elementwise{};
const Creation no_creation{};
const Reduction no_reduction{};
const Linalg no_linalg{};
const Nn no_nn{};
const Optim no_optim{};
}  // namespace

const KernelRow cuda_row{&no_elementwise, &no_creation, &no_reduction, &no_linalg, &no_nn, &no_optim};

}  // namespace tide::kernels
