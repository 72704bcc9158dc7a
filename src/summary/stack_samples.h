// The training thread's Python stacks sampled during the window (python/eroica/stack_sampler.py
// writes rank-<r>.stacks.json beside rank-<r>.json.gz), and those of the DataLoader's worker
// processes in the same window (python/eroica/loader_workers.py), read back on the trace's clock.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "base/status.h"
#include "summary/pattern.h"
#include "trace/trace.h"

namespace eroica {

struct SampledFrame {
  std::string file;
  int line = 0;
  std::string function;
};

struct StackSample {
  int64_t ts_ns = 0;   // on the trace's clock
  uint32_t stack = 0;  // index into StackSamples::stacks
  // How long the sampler thread itself was queued for a CPU since the sample before (its
  // schedstat run_delay), or -1 where the file does not say: the lateness that was not the GIL
  // holder's (stack_attribution.h).
  int64_t sampler_queued_ns = -1;
};

struct StackSamples {
  std::vector<SampledFrame> frames;
  std::vector<std::vector<uint32_t>> stacks;  // frame indexes, innermost first
  std::vector<StackSample> samples;           // by time
  std::vector<std::string> library_prefixes;  // code under these is not the job's own
  double hz = 0;
  // The DataLoader's worker processes, each its main thread (empty without workers): the
  // training thread only waits for them in the loader's __next__.
  std::vector<StackSamples> loader_workers;
  // The training process's other Python threads, sampled at the training thread's moments (a
  // metrics or logging thread): their code is what a rank's busy threads ran.
  std::vector<StackSamples> other_threads;
  // For one of other_threads: its time on a CPU over the window (ns; -1 where not read).
  int64_t cpu_ns = -1;
  // Who had the processor over the window (the file's "cpu", its loader workers' summed in).
  std::optional<CpuShare> cpu;

  bool empty() const { return samples.empty() && loader_workers.empty() && other_threads.empty(); }
};

// Parses the file's text and moves its samples onto `trace`'s clock (trace_clock.h); `path`
// names it in errors.
StatusOr<StackSamples> ParseStackSamples(std::string_view text, const Trace& trace, const std::string& path);

// rank-<r>.stacks.json beside the trace (by its rank), or "" when the rank is unknown.
std::string StackSamplesPathFor(const Trace& trace);

// True for the sampler's file names (diagnose reads them with their trace, not as traces).
bool LooksLikeStackSamplesFile(std::string_view name);

}  // namespace eroica
