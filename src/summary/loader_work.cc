#include "summary/loader_work.h"

#include <algorithm>
#include <cstdint>
#include <string_view>
#include <vector>

namespace eroica {

namespace {

// A sample taken while the worker waited for its next batch's indices: the frame torch's
// `_worker_loop` calls is the multiprocessing queue's `get` (torch 1.x and 2.x alike). Anything
// else it did is making a batch; a stack cut at the sampler's depth is deep in the dataset's code.
bool WaitingForIndices(const StackSamples& worker, const std::vector<uint32_t>& stack) {
  for (size_t i = 0; i + 1 < stack.size(); ++i) {
    const SampledFrame& inner = worker.frames[stack[i]];
    const SampledFrame& caller = worker.frames[stack[i + 1]];
    if (caller.function == "_worker_loop" && inner.function == "get" &&
        std::string_view(inner.file).ends_with("multiprocessing/queues.py")) {
      return true;
    }
  }
  return false;
}

}  // namespace

std::optional<double> BatchMakingShare(const StackSamples& worker) {
  if (worker.samples.size() < 2 || !(worker.hz > 0)) return std::nullopt;
  constexpr double kLongestGapPeriods = 4;
  const auto longest_gap_ns = static_cast<int64_t>(kLongestGapPeriods * 1e9 / worker.hz);
  // Each distinct stack is read once; a window has hundreds of samples of a few stacks.
  std::vector<bool> waiting(worker.stacks.size());
  for (size_t s = 0; s < worker.stacks.size(); ++s) waiting[s] = WaitingForIndices(worker, worker.stacks[s]);
  int64_t sampled_ns = 0, making_ns = 0;
  for (size_t i = 0; i + 1 < worker.samples.size(); ++i) {
    const StackSample& sample = worker.samples[i];
    int64_t gap = std::clamp<int64_t>(worker.samples[i + 1].ts_ns - sample.ts_ns, 0, longest_gap_ns);
    sampled_ns += gap;
    if (sample.stack < waiting.size() && !waiting[sample.stack]) making_ns += gap;
  }
  if (sampled_ns <= 0) return std::nullopt;
  return static_cast<double>(making_ns) / static_cast<double>(sampled_ns);
}

}  // namespace eroica
