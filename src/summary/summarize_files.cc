#include "summary/summarize_files.h"

#include <algorithm>
#include <atomic>
#include <filesystem>
#include <optional>
#include <thread>

#include "base/file_util.h"
#include "summary/rank_meta.h"
#include "summary/stack_samples.h"
#include "trace/reader.h"

namespace eroica {

namespace {

// EROICA_STACK_MAX_SAMPLES (20000) samples write about 1 MB; far more is not the sampler's file.
constexpr size_t kMaxStackSamplesBytes = size_t{64} << 20;

// The window's Python stacks written beside the trace, when there are any; a one-line note
// when they cannot be used.
StackSamples StackSamplesBeside(const Trace& trace, std::string* note) {
  std::string path = StackSamplesPathFor(trace);
  std::error_code error;
  if (path.empty() || !std::filesystem::exists(path, error)) return {};
  StatusOr<std::string> text = ReadSmallFile(path, kMaxStackSamplesBytes);
  StatusOr<StackSamples> samples = text.ok() ? ParseStackSamples(*text, trace, path) : text.status();
  if (!samples.ok()) {
    *note = samples.status().message();
    return {};
  }
  return std::move(*samples);
}

// A reader's memory besides its events: the read buffer (a few MB, more for a refused event
// array chunk), the inflate slots, the interned strings. The summarizer's per-event working
// arrays (role, function id, slice index, critical-path piece: at most 17 bytes beside an event's
// 40) then add under half the events' own bytes (BENCHMARKS.md: 153 MB peak for 109 MB of
// events), so a reader's peak is about 1.5x its events plus this.
constexpr size_t kReaderFixedBytes = size_t{32} << 20;
constexpr double kPeakPerEventByte = 1.5;
// Below this share a reader could keep only small traces: run fewer readers instead.
constexpr size_t kMinReaderShare = size_t{96} << 20;

}  // namespace

ReaderPlan PlanReaders(size_t files, int threads, size_t max_memory_bytes) {
  ReaderPlan plan;
  int most = std::max(1, threads);
  plan.readers = std::clamp<int>(most, 1, static_cast<int>(std::max<size_t>(1, files)));
  if (max_memory_bytes > 0) {
    plan.readers = std::clamp<int>(static_cast<int>(max_memory_bytes / kMinReaderShare), 1, plan.readers);
    size_t share = max_memory_bytes / static_cast<size_t>(plan.readers);
    size_t for_events = share > kReaderFixedBytes ? share - kReaderFixedBytes : 0;
    plan.max_event_bytes = std::max<size_t>(sizeof(TraceEvent), static_cast<size_t>(for_events / kPeakPerEventByte));
  }
  plan.inflate_on_helper_thread = most > plan.readers;
  return plan;
}

bool LooksLikeTraceFile(const std::string& path) {
  return (path.ends_with(".json") || path.ends_with(".json.gz")) && !LooksLikeStackSamplesFile(path);
}

FileSummaries SummarizeFiles(const std::vector<std::string>& paths, int threads, const SummarizeOptions& options,
                             const SamplesProvider& samples_for, size_t max_memory_bytes) {
  ReaderPlan plan = PlanReaders(paths.size(), threads, max_memory_bytes);
  ReadOptions read_options;
  read_options.inflate_on_helper_thread = plan.inflate_on_helper_thread;
  read_options.max_event_bytes = plan.max_event_bytes;
  std::vector<std::optional<WorkerPattern>> patterns(paths.size());
  std::vector<std::string> errors(paths.size());
  std::vector<std::string> notes(paths.size());
  std::atomic<size_t> next{0};
  auto work = [&] {
    for (size_t i = next++; i < paths.size(); i = next++) {
      StatusOr<Trace> trace = ReadTrace(paths[i], read_options);
      if (!trace.ok()) {
        errors[i] = trace.status().message();
        continue;
      }
      if (std::optional<Json> meta = ReadRankMeta(*trace)) {
        // A bare CPU trace names no host; the rank's meta file does (ranks sharing one compare
        // on the same processors: localize/cpu_contention.h SharesPeersProcessors).
        if (trace->meta.host.empty()) trace->meta.host = RankMetaHost(*meta);
        trace->meta.completed_steps = RankMetaCompletedSteps(*meta);
        if (std::string missed = RankMetaMissed(*meta); !missed.empty()) {
          errors[i] = fmt::format("{}: its rank missed the window ({}): left out", paths[i], missed);
          continue;
        }
      }
      SummarizeOptions trace_options = options;
      if (samples_for) trace_options.samples = samples_for(*trace, &notes[i]);
      std::string stacks_note;
      trace_options.stack_samples = StackSamplesBeside(*trace, &stacks_note);
      if (!stacks_note.empty()) notes[i] += (notes[i].empty() ? "" : "; ") + stacks_note;
      StatusOr<Summary> summary = Summarize(*trace, trace_options);
      if (!summary.ok()) {
        errors[i] = summary.status().message();
        continue;
      }
      patterns[i] = std::move(summary->pattern);
    }
  };
  std::vector<std::thread> pool;
  for (int t = 1; t < plan.readers; ++t) pool.emplace_back(work);
  work();
  for (std::thread& t : pool) t.join();
  FileSummaries out;
  for (size_t i = 0; i < paths.size(); ++i) {
    if (patterns[i]) out.patterns.push_back(std::move(*patterns[i]));
    if (!errors[i].empty()) out.errors.push_back(std::move(errors[i]));
    if (!notes[i].empty()) out.notes.push_back(std::move(notes[i]));
  }
  return out;
}

}  // namespace eroica
