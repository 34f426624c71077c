// The one header a tide user includes.
#pragma once

#include <tide/core/autograd.h>
#include <tide/core/cpu_cache.h>
#include <tide/core/device.h>
#include <tide/core/dtype.h>
#include <tide/core/engine.h>
#include <tide/core/error.h>
#include <tide/core/shape.h>
#include <tide/core/stats.h>
#include <tide/core/sync_policy.h>
#include <tide/core/tensor.h>
#include <tide/ops/autograd.h>
#include <tide/ops/creation.h>
#include <tide/ops/elementwise.h>
#include <tide/ops/views.h>
#include <tide/ops/linalg.h>
#include <tide/ops/modules.h>
#include <tide/ops/nn.h>
#include <tide/ops/optimizers.h>
#include <tide/ops/reduction.h>
#include <tide/ops/safetensors.h>
#include <tide/comm/communicator.h>
#include <tide/comm/data_parallel.h>
#include <tide/launch/runtime.h>
