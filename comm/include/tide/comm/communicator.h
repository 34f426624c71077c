// Collectives (all_reduce, broadcast, all_gather, reduce_scatter, barrier)
// will live here as engine ops on each device's comm stream: MPI for host
// tensors, NCCL for CUDA tensors. Nothing is declared yet.
#pragma once

#include <tide/ops/creation.h>
