#include "summary/stack_attribution.h"

#include <fmt/core.h>

#include <algorithm>
#include <map>
#include <optional>
#include <set>
#include <string>

namespace eroica {
namespace {

// One sample stands for at most this long: a longer silence is the sampler's, not the code's.
constexpr int64_t kMaxSampleIntervalNs = 2'000'000'000;
constexpr double kDefaultHz = 100;

bool Attributed(Category category) { return category == Category::kHost || category == Category::kDataloader; }

int64_t PeriodNs(const StackSamples& samples) {
  return static_cast<int64_t>(1e9 / (samples.hz > 0 ? samples.hz : kDefaultHz));
}

// The innermost frame of the job's own code per stack, or -1.
std::vector<int64_t> UserFrames(const StackSamples& samples) {
  std::vector<int64_t> out(samples.stacks.size(), -1);
  for (size_t s = 0; s < samples.stacks.size(); ++s) {
    for (uint32_t frame : samples.stacks[s]) {
      if (!IsLibraryFrame(samples.frames[frame], samples.library_prefixes)) {
        out[s] = frame;
        break;
      }
    }
  }
  return out;
}

// Each frame's "file:line(function)", or "" where it is library code: formatted once per frame,
// not once per sample that holds it.
std::vector<std::string> UserFrameLocations(const StackSamples& samples) {
  std::vector<std::string> out(samples.frames.size());
  for (size_t k = 0; k < samples.frames.size(); ++k) {
    const SampledFrame& f = samples.frames[k];
    if (!IsLibraryFrame(f, samples.library_prefixes)) out[k] = fmt::format("{}:{}({})", f.file, f.line, f.function);
  }
  return out;
}

}  // namespace

bool IsLibraryFrame(const SampledFrame& frame, const std::vector<std::string>& prefixes) {
  const std::string& file = frame.file;
  if (file.empty() || file.front() == '<') return true;
  if (file.find("/site-packages/") != std::string::npos || file.find("/dist-packages/") != std::string::npos) {
    return true;
  }
  return std::any_of(prefixes.begin(), prefixes.end(),
                     [&](const std::string& prefix) { return !prefix.empty() && file.starts_with(prefix); });
}

namespace {

// Sampled time per function, and per (function, user frame) by the frame's location.
struct Tally {
  std::map<uint32_t, int64_t> sampled_ns;
  std::map<uint32_t, std::map<std::string, int64_t>> frame_ns;
};

// A function's time as the samples saw it: `inside` from the samples taken while one of its
// spans ran, `around` from every sample whose interval overlaps one, and `library_ns`, the part
// of `around` whose sample was in library code (waiting in torch or the standard library).
struct Tallies {
  Tally inside;
  Tally around;
  std::map<uint32_t, int64_t> library_ns;
};

// The interval each sample stands for. The sampler sleeps one period after a sample, then waits
// for a CPU and for the GIL: time past the period is the GIL holder's, whose code the late sample
// shows (a gc.collect() that delayed it), but for the sampler's own queueing where the file
// gives it: on busy cores the training thread runs on meanwhile (a 5-rank MLP on 2 cores with a
// loop in every step: the samplers' own waits were 71-87 % of their lateness, and a sample after
// a 27 ms gap, period 6.7 ms, gave the loop's time to the forward's line after it); the period
// itself is split at its middle between the samples
// on either side, each nearer to what it saw (a sample just after a loop ended otherwise took the
// whole loop for the code that followed it). Its overlap with the critical-path spans of the
// functions `counted` goes to them and to its user frame, in `inside` too where the sample was
// taken during the span.
void TallySamples(const StackSamples& samples, const CriticalPath& path, const FunctionTable& table,
                  bool (*counted)(Category), Tallies* tallies) {
  if (samples.samples.empty()) return;
  std::vector<int64_t> user_frames = UserFrames(samples);
  std::vector<std::string> locations = UserFrameLocations(samples);
  int64_t period_ns = PeriodNs(samples);
  const std::vector<StackSample>& taken = samples.samples;
  // Where the period after sample i hands over to sample i + 1.
  auto handover = [&](size_t i) {
    int64_t gap = taken[i + 1].ts_ns - taken[i].ts_ns;
    return taken[i].ts_ns + std::min(gap, std::min(period_ns, kMaxSampleIntervalNs)) / 2;
  };
  CriticalPath::Iterator cursor = path.begin();
  for (size_t i = 0; i < taken.size(); ++i) {
    const StackSample& sample = taken[i];
    int64_t begin = i == 0 ? sample.ts_ns - period_ns / 2 : handover(i - 1);
    begin = std::max(begin, sample.ts_ns - kMaxSampleIntervalNs);
    int64_t end = i + 1 < taken.size() ? handover(i) : sample.ts_ns + period_ns / 2;
    // The sampler's own wait for a CPU after its sleep: the training thread ran on meanwhile,
    // code no sample saw. Only the rest of a late sample's delay is the GIL holder's.
    int64_t unknown_begin = 0;
    int64_t unknown_end = 0;
    if (i > 0 && sample.sampler_queued_ns > 0) {
      int64_t late = sample.ts_ns - taken[i - 1].ts_ns - period_ns;
      unknown_begin = std::max(begin, taken[i - 1].ts_ns + period_ns);
      unknown_end = unknown_begin + std::min({sample.sampler_queued_ns, std::max<int64_t>(late, 0),
                                              std::max<int64_t>(end - unknown_begin, 0)});
    }
    while (cursor != path.end() && (*cursor).end_ns <= begin) ++cursor;
    for (CriticalPath::Iterator k = cursor; k != path.end() && (*k).start_ns < end; ++k) {
      const Span span = *k;
      int64_t overlap = std::min(end, span.end_ns) - std::max(begin, span.start_ns);
      overlap -= std::max<int64_t>(0, std::min(unknown_end, span.end_ns) - std::max(unknown_begin, span.start_ns));
      if (overlap <= 0 || !counted(table.all()[span.function].category)) continue;
      int64_t frame = user_frames[sample.stack];
      auto add = [&](Tally* tally) {
        tally->sampled_ns[span.function] += overlap;
        if (frame >= 0) tally->frame_ns[span.function][locations[static_cast<size_t>(frame)]] += overlap;
      };
      add(&tallies->around);
      if (span.start_ns <= sample.ts_ns && sample.ts_ns <= span.end_ns) add(&tallies->inside);
      const std::vector<uint32_t>& stack = samples.stacks[sample.stack];
      if (stack.empty() || static_cast<int64_t>(stack.front()) != frame) {
        tallies->library_ns[span.function] += overlap;
      }
    }
  }
}

// The function's hottest frames of `tally` (each with `min_periods` of its time), or none.
std::vector<HotFrame> HottestFrames(const Tally& tally, uint32_t function, int64_t period_ns, size_t max_frames,
                                    double min_periods = kMinHotFramePeriods) {
  std::vector<HotFrame> out;
  auto frames = tally.frame_ns.find(function);
  auto total = tally.sampled_ns.find(function);
  if (frames == tally.frame_ns.end() || total == tally.sampled_ns.end() || total->second <= 0) return out;
  std::vector<std::pair<int64_t, const std::string*>> ranked;
  for (const auto& [location, ns] : frames->second) ranked.push_back({ns, &location});
  std::sort(ranked.begin(), ranked.end(), [](const auto& a, const auto& b) {
    return a.first != b.first ? a.first > b.first : *a.second < *b.second;
  });
  for (const auto& [ns, location] : ranked) {
    float share = static_cast<float>(static_cast<double>(ns) / static_cast<double>(total->second));
    if (out.size() >= max_frames || share < kMinHotFrameShare ||
        static_cast<double>(ns) < min_periods * static_cast<double>(period_ns)) {
      break;
    }
    out.push_back({*location, share});
  }
  return out;
}

bool IsDataloader(Category category) { return category == Category::kDataloader; }

// The function's hottest frames from the samples taken while it ran, where they name any: a
// sample taken after a span ended shows the code after it (a Python loop that kept the GIL from
// the sampler until the forward's first line: val32's light global Python, 7.7 ms a step, had
// the forward's line named on 1 of its 3 ranks and no line on the others). Else from the samples around its spans: a C
// call that held the GIL throughout, which a sample just after stands for, or a Python loop that issues an op per
// element, whose gaps between the ops are too short to be sampled in (an LSTM job's per-row gradient norms, each gap a
// few µs, were named only so).
std::vector<HotFrame> HottestSeenFrames(const Tallies& tallies, uint32_t function, int64_t period_ns,
                                        size_t max_frames) {
  std::vector<HotFrame> seen = HottestFrames(tallies.inside, function, period_ns, max_frames, kMinSeenFramePeriods);
  return seen.empty() ? HottestFrames(tallies.around, function, period_ns, max_frames) : seen;
}

// Whether the training thread spent most of the function's sampled time in library code: in a
// DataLoader with worker processes, waiting for their batches (a queue, the file-descriptor
// handshake that passes each tensor), not running the job's code.
bool MostlyInLibraryCode(const Tallies& tallies, uint32_t function) {
  auto total = tallies.around.sampled_ns.find(function);
  auto library = tallies.library_ns.find(function);
  return total != tallies.around.sampled_ns.end() && library != tallies.library_ns.end() &&
         2 * library->second > total->second;
}

// One sampled thread's samples in [begin_ns, end_ns) that name the job's own code, each standing for
// its period times `weight`, into a pseudo-function's tally (index 0), with the longest period in
// *period_ns: what a thread ran over the whole window, with no span whose edges a neighbour's time
// could fill.
void TallyWindow(const StackSamples& thread, int64_t begin_ns, int64_t end_ns, double weight, Tally* tally,
                 int64_t* period_ns) {
  std::vector<int64_t> user_frames = UserFrames(thread);
  std::vector<std::string> locations = UserFrameLocations(thread);
  int64_t period = PeriodNs(thread);
  *period_ns = std::max(*period_ns, period);
  auto weighed = static_cast<int64_t>(weight * static_cast<double>(period));
  for (const StackSample& sample : thread.samples) {
    int64_t frame = user_frames[sample.stack];
    if (frame < 0 || sample.ts_ns < begin_ns || sample.ts_ns >= end_ns) continue;
    tally->sampled_ns[0] += weighed;
    tally->frame_ns[0][locations[static_cast<size_t>(frame)]] += weighed;
  }
}

}  // namespace

std::vector<HotFrame> HottestLoaderWorkerFrames(const StackSamples& samples, int64_t begin_ns, int64_t end_ns,
                                                size_t max_frames) {
  // Every worker's samples in the job's code, each one period. A worker waiting for its next
  // indices sits in the standard library and counts for nothing; a late sample is a worker queued
  // for a CPU, not one holding the GIL for others.
  Tally tally;
  int64_t period_ns = 0;
  for (const StackSamples& worker : samples.loader_workers)
    TallyWindow(worker, begin_ns, end_ns, 1.0, &tally, &period_ns);
  // Each sample is what a worker ran at that moment: one period names a line, as for the samples
  // taken inside a span. Short windows give a worker few samples: a global pure-Python
  // augmentation in the workers of an unseen 4-rank job (8 steps of ~20 ms, 4-13 samples a
  // worker) and a recommender job's per-sample transform on one rank were named at the training
  // loop's line with three.
  return HottestFrames(tally, 0, period_ns, max_frames, kMinSeenFramePeriods);
}

std::vector<HotFrame> HottestOtherThreadFrames(const StackSamples& samples, int64_t begin_ns, int64_t end_ns,
                                               size_t max_frames) {
  // As for the loader's workers, with each thread's samples weighed by how much of its sampled
  // time it ran: the samples catch a thread wherever it is, asleep in its own `time.sleep()` as
  // well as at work. A metrics thread looping 10 ms of Python between 1 ms naps ran most of its
  // time, an idle one waiting for its next snapshot hardly any.
  Tally tally;
  int64_t period_ns = 0;
  for (const StackSamples& thread : samples.other_threads) {
    int64_t seen = 0;
    for (const StackSample& sample : thread.samples) seen += sample.ts_ns >= begin_ns && sample.ts_ns < end_ns;
    double sampled_ns = static_cast<double>(seen) * static_cast<double>(PeriodNs(thread));
    if (sampled_ns <= 0) continue;
    double ran = thread.cpu_ns < 0 ? 1.0 : std::clamp(static_cast<double>(thread.cpu_ns) / sampled_ns, 0.0, 1.0);
    TallyWindow(thread, begin_ns, end_ns, ran, &tally, &period_ns);
  }
  return HottestFrames(tally, 0, period_ns, max_frames, kMinSeenFramePeriods);
}

TrainingLines TrainingThreadLines(const StackSamples& samples, int64_t begin_ns, int64_t end_ns, const TimeSpans& waits,
                                  size_t max_lines) {
  struct Line {
    int64_t ns = 0;
    uint32_t depth = UINT32_MAX;
  };
  std::map<std::string, Line> lines;
  std::vector<std::string> locations = UserFrameLocations(samples);
  int64_t total_ns = 0;
  std::optional<int64_t> previous_ns;    // the window's first sample stands for one period
  std::vector<const std::string*> seen;  // one sample's lines, each counted once (recursion)
  auto wait = waits.begin();             // samples come in time order
  for (const StackSample& sample : samples.samples) {
    if (sample.ts_ns < begin_ns || sample.ts_ns >= end_ns) continue;
    // As in TallySamples: lateness the sampler spent queued for a CPU is time no sample saw.
    int64_t ns = PeriodNs(samples);
    if (previous_ns) {
      int64_t gap = sample.ts_ns - *previous_ns;
      int64_t late = std::max<int64_t>(gap - ns, 0);
      int64_t unseen = sample.sampler_queued_ns > 0 ? std::min(sample.sampler_queued_ns, late) : 0;
      ns = std::clamp<int64_t>(gap - unseen, 0, kMaxSampleIntervalNs);
    }
    previous_ns = sample.ts_ns;
    total_ns += ns;
    while (wait != waits.end() && wait->second <= sample.ts_ns) ++wait;
    if (wait != waits.end() && wait->first <= sample.ts_ns) continue;  // blocked in a collective
    const std::vector<uint32_t>& stack = samples.stacks[sample.stack];
    seen.clear();
    uint32_t depth = 0;  // the job's frames outside this one: the stack is innermost first
    for (auto frame = stack.rbegin(); frame != stack.rend(); ++frame) {
      const std::string& location = locations[*frame];
      if (location.empty()) continue;  // library code
      if (std::none_of(seen.begin(), seen.end(), [&](const std::string* s) { return *s == location; })) {
        Line& line = lines[location];
        line.ns += ns;
        line.depth = std::min(line.depth, depth);
        seen.push_back(&location);
      }
      ++depth;
    }
  }
  TrainingLines out;
  if (total_ns <= 0) return out;
  out.periods = static_cast<float>(static_cast<double>(total_ns) / static_cast<double>(PeriodNs(samples)));
  for (const auto& [location, line] : lines) {
    if (static_cast<double>(line.ns) < kMinCodeLineShare * static_cast<double>(total_ns)) continue;
    out.lines.push_back(
        {location, static_cast<float>(static_cast<double>(line.ns) / static_cast<double>(total_ns)), line.depth});
  }
  std::sort(out.lines.begin(), out.lines.end(), [](const CodeFrame& a, const CodeFrame& b) {
    return a.share != b.share ? a.share > b.share : a.location < b.location;
  });
  if (out.lines.size() > max_lines) out.lines.resize(max_lines);
  return out;
}

std::unordered_map<uint32_t, std::vector<HotFrame>> AttributeStackSamples(const StackSamples& samples,
                                                                          const CriticalPath& path,
                                                                          const FunctionTable& table,
                                                                          size_t max_frames) {
  std::unordered_map<uint32_t, std::vector<HotFrame>> out;
  if (samples.empty() || path.empty()) return out;
  Tallies training;
  TallySamples(samples, path, table, Attributed, &training);
  // While the training thread waits in the loader, the loader's worker processes do the work
  // it waits for: their user frames at those moments are the loader's time, when they ran any.
  Tallies workers;
  int64_t worker_period_ns = 0;
  for (const StackSamples& worker : samples.loader_workers) {
    TallySamples(worker, path, table, IsDataloader, &workers);
    worker_period_ns = std::max(worker_period_ns, PeriodNs(worker));
  }
  // Workers that prefetch make batches while the training thread computes, and it may then wait
  // for the hand-over itself (each tensor's file descriptor fetched from the worker: 20 ms on
  // val32's 5-rank job with 30 ms collate stalls, the workers idle meanwhile). Their code is
  // still what the loader's time comes from: where the training thread's samples mostly wait in
  // library code, the workers' hottest frames over the window name it.
  std::vector<HotFrame> workers_overall =
      HottestLoaderWorkerFrames(samples, path.start_ns(), path.end_ns(), max_frames);
  std::set<uint32_t> functions;
  for (const auto& [function, ns] : training.around.sampled_ns) functions.insert(function);
  for (const auto& [function, ns] : workers.around.sampled_ns) functions.insert(function);
  for (uint32_t function : functions) {
    std::vector<HotFrame> hot = HottestSeenFrames(workers, function, worker_period_ns, max_frames);
    if (hot.empty() && IsDataloader(table.all()[function].category) && !workers_overall.empty() &&
        MostlyInLibraryCode(training, function)) {
      hot = workers_overall;
    }
    if (hot.empty()) hot = HottestSeenFrames(training, function, PeriodNs(samples), max_frames);
    if (!hot.empty()) out.emplace(function, std::move(hot));
  }
  return out;
}

}  // namespace eroica
