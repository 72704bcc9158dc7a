// A worker's runtime behaviour pattern: per function (β, μ, σ) plus the few figures that make
// diagnosis sharper. This is what a worker ships instead of its trace (docs/DESIGN.md "Critical
// path and the pattern"). The on-disk form is in pattern_file.h.
#pragma once

#include <array>
#include <cstddef>
#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "summary/category.h"

namespace eroica {

// A frame of the job's own code where the window's stack samples found a function's time.
struct HotFrame {
  std::string location;  // "path/file.py:57(function)"
  float share = 0;       // of the function's sampled critical-path time
};

// A line of the job's own code on the training thread's sampled stacks, wherever on them (a
// caller's line as well as the innermost one): the share of the window's sampled time whose stacks
// held it, and its depth (the fewest frames of the job's code outside it on those stacks).
// The most a pattern keeps, and the least share of the window's sampled time a kept line holds:
// a training loop's stacks hold a few dozen lines of the job's code, and 1 % of a 5-step window
// of 100 ms steps sampled at 150 Hz is under one sample. A line missing from a list that is not
// full was not sampled there, or about once.
inline constexpr size_t kMaxCodeLines = 24;
inline constexpr float kMinCodeLineShare = 0.01F;

struct CodeFrame {
  std::string location;  // "path/file.py:57(function)"
  float share = 0;
  uint32_t depth = 0;
};

struct FunctionPattern {
  std::string name;  // stable across ranks (function_name.h)
  Category category = Category::kHost;
  HostKind host_kind = HostKind::kNone;
  double beta = 0;              // share of the window this function owns the critical path
  std::optional<double> mu;     // mean utilisation of its resource while it owns the path
  std::optional<double> sigma;  // standard deviation of that utilisation
  double calls_per_iter = 0;
  double mean_duration_us = 0;    // mean inclusive duration of one call
  double median_duration_us = 0;  // the median call's (duration_histogram.h); 0: unknown (older patterns, folded tails)
  double low_quartile_duration_us = 0;  // the lower quartile call's; 0: unknown (patterns before version 5)
  int64_t bytes_per_iter = 0;           // memcpy/collective bytes, when the trace has them
  uint32_t shapes_hash = 0;             // hash of the input shapes seen, 0 when none recorded
  std::vector<HotFrame> hot_frames;     // host and dataloader functions, hottest first (stack samples)
};

// One collective call, in issue order: who arrives last at a collective waits least in it.
struct CollectiveCall {
  std::string name;       // the collective's function name (function_name.h)
  float duration_us = 0;  // how long the transfer took on this worker, waiting included
  // The profiled iteration it began in (0-based, the window's steps); -1: unknown (patterns before
  // version 11). A job's calls need not split evenly into its steps (a metrics all-reduce every
  // 10th step, a loss all-reduce at some steps only): 169 of 271 sessions of stops 64-66's batches
  // had such a window, and the waits could not be read step by step (collective_waits.cc).
  int32_t iteration = -1;
};

// Who had the processor over the window (python/eroica/cpu_share.py, from the stack samples'
// file): waits in a collective or for the loader on a node whose cores were all busy are waits
// for a CPU, whatever the trace calls them.
struct CpuShare {
  float cpus = 0;         // the node's online cores
  float host_busy = 0;    // share of all its cores' time spent busy (0..1)
  float process_cpu = 0;  // cores used by the training process's threads
  float run_delay = 0;    // thread-seconds its threads were runnable and queued, per second
  // The same for its DataLoader worker processes together (0 without workers or their files):
  // each worker's batch-making thread where it was read on its own, else all its threads.
  float loader_cpu = 0;
  float loader_run_delay = 0;
  // Thread-seconds per second those threads spent making batches (loader_work.h: not waiting
  // for the next batch's indices), and of that slept (not on a CPU, not queued); negative where
  // a worker's samples did not tell.
  float loader_asleep = -1;
  float loader_making = -1;
  // Share of the window the process's CPU quota (its cgroup's or an ancestor's) held it back;
  // negative where no cgroup figure was read. Quota throttling counts as run delay too.
  float throttled = -1;
  // The training thread alone (the one that runs the step): time on a CPU and queued, per
  // second; negative where it was not read. What is left of its time it slept: in I/O, sleeps,
  // collectives, waiting for loader workers.
  float main_cpu = -1;
  float main_run_delay = -1;
};

struct WorkerPattern {
  int rank = -1;
  int world_size = -1;
  std::string host;
  std::string source;       // the trace file it was made from
  bool has_device = false;  // GPU trace (kernels) or CPU-only training
  std::string device_name;
  std::string group;              // role signature: workers compare only with their like
  std::vector<int64_t> step_ids;  // ProfilerStep#N numbers covered
  int64_t window_ns = 0;
  double iteration_s = 0;                              // mean iteration time over the window
  std::array<double, kCategoryCount> category_beta{};  // Σβ per category, before pruning
  // The same per iteration (share of that iteration): a fault persists, noise moves around.
  std::vector<std::array<float, kCategoryCount>> iteration_category_beta;
  double dataloader_ops_per_iter = 0;  // calls of the data loader's most frequent op: its items
  double compute_calls_per_iter = 0;
  std::vector<CollectiveCall> collectives;  // the window's first collective calls, in order
  std::vector<FunctionPattern> functions;   // by β, descending; the tail folded into "(other ...)"
  std::vector<std::string> warnings;        // data-quality notes from reading and summarizing
  std::optional<CpuShare> cpu;              // absent without the sampler's "cpu" reading
  // The DataLoader worker processes' hottest frames of the job's own code over the whole window
  // (their stack samples; share: of their samples in the job's code), hottest first: what their
  // CPU went to, where they keep up and the training thread seldom waits for them.
  std::vector<HotFrame> loader_worker_frames;
  // The training process's other Python threads' hottest frames of the job's own code over the
  // window (stack_attribution.h HottestOtherThreadFrames), hottest first: the code of a thread
  // that holds the interpreter lock or the cores beside the training loop, which no line of the
  // training thread's names (patterns before version 10: empty).
  std::vector<HotFrame> other_thread_frames;
  // The training thread's lines of the job's own code that held the most of the window's sampled
  // time (stack_attribution.h TrainingThreadLines), most first: a line a rank ran that its peers
  // never did names the code behind its extra work (localize/own_code_line.h).
  std::vector<CodeFrame> code_lines;
  // How many sampling periods those samples' time spans (0: unknown, patterns before version 9):
  // a line's share of it is how often a sampler could have seen the line, the count that says
  // whether a peer's samples missing it means the peer never ran it or only chance.
  float code_line_periods = 0;

  int iterations() const { return static_cast<int>(step_ids.size()); }
};

}  // namespace eroica
