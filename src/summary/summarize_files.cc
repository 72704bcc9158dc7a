#include "summary/summarize_files.h"

#include <algorithm>
#include <atomic>
#include <optional>
#include <thread>

#include "trace/reader.h"

namespace eroica {

bool LooksLikeTraceFile(const std::string& path) {
  return path.ends_with(".json") || path.ends_with(".json.gz");
}

FileSummaries SummarizeFiles(const std::vector<std::string>& paths, int threads,
                             const SummarizeOptions& options, const SamplesProvider& samples_for) {
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
