// The classification table: what role each trace event plays on the critical path. One table,
// read top to bottom, first match wins (classify.cc).
#pragma once

#include <cstdint>
#include <string_view>

#include "summary/category.h"

namespace eroica {

enum class EventRole : uint8_t {
  kIgnore,         // profiler bookkeeping, GPU projections of CPU annotations
  kStepMarker,     // ProfilerStep#N
  kDeviceCompute,  // GPU kernels
  kDeviceMemory,   // memcpy / memset
  kDeviceComm,     // NCCL/RCCL/DeepEP kernels
  kDataloader,     // enumerate(DataLoader)#...__next__ (and, by nesting, its children)
  kGc,             // Python garbage collection (eroica's own eroica::gc ranges)
  kOptimizer,      // Optimizer.step#..., Optimizer.zero_grad#...
  kCpuComm,        // c10d::, gloo:, nccl: annotations, record_param_comms
  kCpuOp,          // aten ops and autograd nodes: compute on CPU training, host on GPU
  kPython,         // python_function (with_stack)
  kLaunch,         // cuda_runtime / cuda_driver calls
  kSync,           // cuda_sync, cudaStreamSynchronize, ...
  kAnnotation,     // any other record_function range
};

EventRole ClassifyEvent(std::string_view cat, std::string_view name);

// True for the roles that run on the device rather than a CPU thread.
inline bool IsDeviceRole(EventRole role) {
  return role == EventRole::kDeviceCompute || role == EventRole::kDeviceMemory || role == EventRole::kDeviceComm;
}

}  // namespace eroica
