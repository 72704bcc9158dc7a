#include "summary/summarize_files.h"

#include <algorithm>
#include <atomic>
#include <filesystem>
#include <optional>
#include <thread>

#include "base/file_util.h"
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

}  // namespace

bool LooksLikeTraceFile(const std::string& path) {
  return (path.ends_with(".json") || path.ends_with(".json.gz")) && !LooksLikeStackSamplesFile(path);
}

FileSummaries SummarizeFiles(const std::vector<std::string>& paths, int threads, const SummarizeOptions& options,
                             const SamplesProvider& samples_for) {
  std::vector<std::optional<WorkerPattern>> patterns(paths.size());
  std::vector<std::string> errors(paths.size());
  std::vector<std::string> notes(paths.size());
  std::atomic<size_t> next{0};
  auto work = [&] {
    for (size_t i = next++; i < paths.size(); i = next++) {
      StatusOr<Trace> trace = ReadTrace(paths[i]);
      if (!trace.ok()) {
        errors[i] = trace.status().message();
        continue;
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
  int workers = std::clamp<int>(threads, 1, static_cast<int>(std::max<size_t>(1, paths.size())));
  std::vector<std::thread> pool;
  for (int t = 1; t < workers; ++t) pool.emplace_back(work);
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
