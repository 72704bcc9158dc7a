// The hardware resources whose utilisation gives a function its μ and σ (docs/DESIGN.md): the
// agent samples them, summarize attributes them to the functions that ran meanwhile.
#pragma once

namespace eroica {

enum class ResourceKind { kCpu, kNetwork, kGpuSm, kPcie, kNvlink };

// "cpu", "network", "gpu_sm", "pcie", "nvlink".
constexpr const char* ResourceName(ResourceKind resource) {
  switch (resource) {
    case ResourceKind::kCpu:
      return "cpu";
    case ResourceKind::kNetwork:
      return "network";
    case ResourceKind::kGpuSm:
      return "gpu_sm";
    case ResourceKind::kPcie:
      return "pcie";
    case ResourceKind::kNvlink:
      return "nvlink";
  }
  return "?";
}

}  // namespace eroica
