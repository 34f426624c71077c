// The CPU row of kernels.h: the tables of this folder's files.
#include "../kernels.h"

namespace tide::kernels {

const KernelRow cpu_row{&cpu_elementwise, &cpu_creation, &cpu_reduction, &cpu_linalg, &cpu_nn, &cpu_optim};

}  // namespace tide::kernels
