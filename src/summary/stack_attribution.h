// Which line of the job's code a host or dataloader function's critical-path time comes from.
// Each stack sample stands for the interval since the one before it (a C call that holds the
// GIL, such as gc.collect(), delays the next sample to its end): the overlap of that interval
// with the function's critical-path spans goes to the sample's innermost frame of the job's own
// code, skipping the standard library, installed packages, torch and eroica. Where the samples
// taken during a function's spans name a line, only they do (one taken after shows the code after
// it). A dataloader function's time goes to the DataLoader worker processes' user frames at the
// same moments when they ran any (the training thread only waits for them there), else, where
// the training thread only waited in library code, to the workers' hottest frames over the
// window (prefetching workers make batches while it computes), else to the training thread's.
#pragma once

#include <cstdint>
#include <unordered_map>
#include <vector>

#include "summary/critical_path.h"
#include "summary/function_table.h"
#include "summary/pattern.h"
#include "summary/stack_samples.h"

namespace eroica {

// A frame shows up for a function only with at least this share of its sampled time.
inline constexpr float kMinHotFrameShare = 0.1F;
// ... and with at least this many sampling periods of it. An on-time sample stands for one
// period, half on either side, so the line next to a function's spans can take up to half a period
// at each of its edges, and a loop shorter than the period is sampled once or never: edge21's
// 2-rank transformer with a 2.8 ms loop in each 45 ms step (150 Hz, a 6.7 ms period) had its
// point's time 1.8 periods at the forward's line after the loop and none in it. From one or two
// samples' time a line is named no better than its neighbour.
inline constexpr double kMinHotFramePeriods = 3;
// A line seen by samples taken during the function's spans, or by the loader workers' samples
// over the window (each what a worker ran at that moment), needs one period of their time: no
// neighbour's edge is in it (the samples around a span are left out where any was taken inside),
// and a short loop that kept the GIL from the sampler is caught in it a few times a window
// (val32's light global Python, 7.7 ms in each 100 ms step at 150 Hz: 2-3 samples a rank). Over
// the saved runs this named 6 more lines right (five light global Python loops, one checkpoint)
// and none wrong; for the workers, none changed there, and two unseen jobs' worker transforms were
// named at their line instead of the training loop's.
inline constexpr double kMinSeenFramePeriods = 1;

// Function index -> its hottest user frames (at most `max_frames`), for the host and
// dataloader functions of `table` that own sampled time on `path` (sorted, disjoint).
std::unordered_map<uint32_t, std::vector<HotFrame>> AttributeStackSamples(const StackSamples& samples,
                                                                          const CriticalPath& path,
                                                                          const FunctionTable& table,
                                                                          size_t max_frames = 2);

// The DataLoader worker processes' hottest user frames (at most `max_frames`) over
// [begin_ns, end_ns), each sample standing for the period after it; a frame's share is of their
// samples' time in the job's own code. Empty without worker samples.
std::vector<HotFrame> HottestLoaderWorkerFrames(const StackSamples& samples, int64_t begin_ns, int64_t end_ns,
                                                size_t max_frames = 2);

// The training process's other Python threads' hottest user frames (at most `max_frames`) over
// [begin_ns, end_ns): each sample stands for the period after it, weighed by the share of its
// thread's sampled time that the thread spent on a CPU (a thread asleep at a line of its own code
// ran none of it); a frame's share is of their weighed time in the job's own code. Empty without
// other threads' samples.
std::vector<HotFrame> HottestOtherThreadFrames(const StackSamples& samples, int64_t begin_ns, int64_t end_ns,
                                               size_t max_frames = 2);

// The training thread's lines of the job's own code that held the most of [begin_ns, end_ns)'s
// sampled time (at most `max_lines`), each counted once per sample wherever on the stack it sat:
// an evaluation pass shows as its call's line on every sample taken inside it, under the model's
// own lines that training runs too. Each sample stands for the time since the one before (a call
// that kept the GIL from the sampler delays the next sample to its end), less the sampler's own
// wait for a CPU in it, at most two seconds. `periods`: the time all the window's samples stand
// for, in sampling periods (WorkerPattern::code_line_periods).
// `waits`: the thread's spans in collectives (sorted, apart), whose samples count toward the window
// but toward no line: a rank blocked in a broadcast sits at that call's line while it waits for a
// late peer, longer than punctual peers whose samples never see it there, and the wait is not its
// code's (an unseen TP x DP job's rank 3 had 8 % of its window at its batch broadcast, waiting for
// a throttled partner, and was named for "code of its own").
struct TrainingLines {
  std::vector<CodeFrame> lines;
  float periods = 0;
};
using TimeSpans = std::vector<std::pair<int64_t, int64_t>>;
TrainingLines TrainingThreadLines(const StackSamples& samples, int64_t begin_ns, int64_t end_ns,
                                  const TimeSpans& waits = {}, size_t max_lines = kMaxCodeLines);

// Code that is not the job's own: under one of `prefixes`, in an installed package, or not a
// file ("<frozen ...>", "<string>").
bool IsLibraryFrame(const SampledFrame& frame, const std::vector<std::string>& prefixes);

}  // namespace eroica
