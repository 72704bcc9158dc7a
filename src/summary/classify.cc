#include "summary/classify.h"

#include <algorithm>
#include <array>
#include <cctype>

namespace eroica {
namespace {

enum class Match : uint8_t { kAny, kPrefix, kContains, kPrefixNoCase, kAutogradFunction };

struct Rule {
  std::string_view cat;  // "*" matches any cat, "" only events without one
  Match match;
  std::string_view text;
  EventRole role;
};

// Read top to bottom; the first rule whose cat and name match decides.
constexpr std::array kRules = {
    // Profiler bookkeeping.
    Rule{"Trace", Match::kAny, "", EventRole::kIgnore},
    Rule{"overhead", Match::kAny, "", EventRole::kIgnore},
    Rule{"cpu_instant_event", Match::kAny, "", EventRole::kIgnore},
    Rule{"gpu_user_annotation", Match::kAny, "", EventRole::kIgnore},  // GPU copy of a CPU range
    Rule{"*", Match::kPrefix, "ProfilerStep#", EventRole::kStepMarker},
    Rule{"*", Match::kPrefix, "PyTorch Profiler", EventRole::kIgnore},
    // Device activity. NCCL kernel names change across versions; the prefix does not.
    Rule{"kernel", Match::kPrefixNoCase, "nccl", EventRole::kDeviceComm},
    Rule{"kernel", Match::kPrefixNoCase, "rccl", EventRole::kDeviceComm},
    Rule{"kernel", Match::kContains, "::ep::internode::", EventRole::kDeviceComm},  // DeepEP
    Rule{"kernel", Match::kContains, "::ep::intranode::", EventRole::kDeviceComm},
    Rule{"kernel", Match::kContains, "deep_ep", EventRole::kDeviceComm},
    Rule{"kernel", Match::kPrefix, "Memcpy", EventRole::kDeviceMemory},  // older exporters
    Rule{"kernel", Match::kPrefix, "Memset", EventRole::kDeviceMemory},
    Rule{"kernel", Match::kAny, "", EventRole::kDeviceCompute},
    Rule{"Kernel", Match::kAny, "", EventRole::kDeviceCompute},
    Rule{"gpu_memcpy", Match::kAny, "", EventRole::kDeviceMemory},
    Rule{"gpu_memset", Match::kAny, "", EventRole::kDeviceMemory},
    // torch.distributed.nn.functional's autograd functions (their forward, their backward node,
    // the engine's range around it): each starts a collective and waits for it, and their own
    // time is that wait. Plain ranges, under the backend's range (gloo:*, painted above them) as
    // the collective they wait for. Read as autograd nodes (a Backward in the name: compute on
    // CPU training), an unseen mixture-of-experts job's backward all_to_all waits counted as
    // compute, 0.05-0.10 of each rank's 5-step window (0.25 of one step), the most on the ranks
    // that waited longest.
    Rule{"*", Match::kAutogradFunction, "_AlltoAllSingle", EventRole::kAnnotation},
    Rule{"*", Match::kAutogradFunction, "_AlltoAll", EventRole::kAnnotation},
    Rule{"*", Match::kAutogradFunction, "_AllReduce", EventRole::kAnnotation},
    Rule{"*", Match::kAutogradFunction, "_AllGather", EventRole::kAnnotation},
    Rule{"*", Match::kAutogradFunction, "_AllGatherBase", EventRole::kAnnotation},
    Rule{"*", Match::kAutogradFunction, "_Reduce_Scatter", EventRole::kAnnotation},
    Rule{"*", Match::kAutogradFunction, "_Reduce", EventRole::kAnnotation},
    Rule{"*", Match::kAutogradFunction, "_Broadcast", EventRole::kAnnotation},
    Rule{"*", Match::kAutogradFunction, "_Gather", EventRole::kAnnotation},
    Rule{"*", Match::kAutogradFunction, "_Scatter", EventRole::kAnnotation},
    // Recognised CPU-side ranges.
    Rule{"*", Match::kPrefix, "enumerate(DataLoader)", EventRole::kDataloader},
    Rule{"*", Match::kPrefix, "eroica::gc", EventRole::kGc},
    Rule{"*", Match::kPrefix, "Optimizer.", EventRole::kOptimizer},
    Rule{"*", Match::kPrefix, "c10d::", EventRole::kCpuComm},
    Rule{"*", Match::kPrefix, "gloo:", EventRole::kCpuComm},
    Rule{"*", Match::kPrefix, "nccl:", EventRole::kCpuComm},
    Rule{"*", Match::kPrefix, "mpi:", EventRole::kCpuComm},
    Rule{"*", Match::kPrefix, "ucc:", EventRole::kCpuComm},
    Rule{"*", Match::kPrefix, "record_param_comms", EventRole::kCpuComm},
    Rule{"python_function", Match::kAny, "", EventRole::kPython},
    Rule{"cuda_sync", Match::kAny, "", EventRole::kSync},
    Rule{"cuda_runtime", Match::kContains, "Synchronize", EventRole::kSync},
    Rule{"cuda_runtime", Match::kAny, "", EventRole::kLaunch},
    Rule{"cuda_driver", Match::kAny, "", EventRole::kLaunch},
    Rule{"Runtime", Match::kAny, "", EventRole::kLaunch},
    Rule{"cpu_op", Match::kAny, "", EventRole::kCpuOp},
    // CPU-only builds write no cat at all (docs/TRACE-FORMAT.md §9).
    Rule{"", Match::kPrefix, "aten::", EventRole::kCpuOp},
    Rule{"", Match::kPrefix, "autograd::", EventRole::kCpuOp},
    Rule{"", Match::kPrefix, "torch::autograd::", EventRole::kCpuOp},
    Rule{"", Match::kContains, "Backward", EventRole::kCpuOp},
    Rule{"", Match::kPrefix, "torch.distributed.ddp", EventRole::kCpuOp},
    Rule{"*", Match::kAny, "", EventRole::kAnnotation},
};

bool StartsWithNoCase(std::string_view text, std::string_view prefix) {
  if (text.size() < prefix.size()) return false;
  return std::equal(prefix.begin(), prefix.end(), text.begin(), [](char a, char b) {
    return std::tolower(static_cast<unsigned char>(a)) == std::tolower(static_cast<unsigned char>(b));
  });
}

// `name` is the autograd function `function` itself, its backward node (function + "Backward",
// a number after it in some versions) or the autograd engine's range around that node.
bool IsAutogradFunction(std::string_view name, std::string_view function) {
  constexpr std::string_view kEngine = "autograd::engine::evaluate_function: ";
  if (name.starts_with(kEngine)) name.remove_prefix(kEngine.size());
  if (!name.starts_with(function)) return false;
  name.remove_prefix(function.size());
  if (name.empty()) return true;
  if (!name.starts_with("Backward")) return false;
  name.remove_prefix(std::string_view("Backward").size());
  return std::all_of(name.begin(), name.end(), [](char c) { return c >= '0' && c <= '9'; });
}

bool Matches(const Rule& rule, std::string_view cat, std::string_view name) {
  if (rule.cat != "*" && rule.cat != cat) return false;
  switch (rule.match) {
    case Match::kAny:
      return true;
    case Match::kPrefix:
      return name.starts_with(rule.text);
    case Match::kContains:
      return name.find(rule.text) != std::string_view::npos;
    case Match::kPrefixNoCase:
      return StartsWithNoCase(name, rule.text);
    case Match::kAutogradFunction:
      return IsAutogradFunction(name, rule.text);
  }
  return false;
}

}  // namespace

EventRole ClassifyEvent(std::string_view cat, std::string_view name) {
  for (const Rule& rule : kRules) {
    if (Matches(rule, cat, name)) return rule.role;
  }
  return EventRole::kAnnotation;
}

}  // namespace eroica
