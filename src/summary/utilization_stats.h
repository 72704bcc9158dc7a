// μ and σ of a function (DESIGN.md): the mean and spread of its resource's utilisation while it
// owns the critical path. Compute uses the GPU's SM activity (or, on CPU training, the training
// threads' CPU), communication the NIC (or NVLink), memory copies PCIe, host and data loading
// the process's CPU. Without samples for a resource, μ and σ stay absent, never invented.
#pragma once

#include <cstdint>
#include <optional>
#include <vector>

#include "base/resource_kind.h"
#include "summary/critical_path.h"
#include "summary/function_table.h"

namespace eroica {

// Utilisation in [0, 1], timestamps in the trace's clock (ns). Point i covers (ts[i-1], ts[i]].
struct ResourceSamples {
  ResourceKind kind = ResourceKind::kCpu;
  std::vector<int64_t> ts_ns;
  std::vector<float> utilization;
};

// The resource that tells how well a function of `category` uses the hardware.
std::optional<ResourceKind> ResourceFor(Category category, bool has_device,
                                        const std::vector<ResourceSamples>& available);

// Fills mu/sigma of every function in `table` that owns enough sampled time on `path`.
void AddUtilization(const CriticalPath& path, bool has_device, const std::vector<ResourceSamples>& samples,
                    FunctionTable* table);

}  // namespace eroica
