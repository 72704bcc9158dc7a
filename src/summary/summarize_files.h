// Summarizes many trace files in parallel (one reader per core), keeping going past bad ones.
#pragma once

#include <functional>
#include <string>
#include <vector>

#include "summary/pattern.h"
#include "summary/summarizer.h"

namespace eroica {

struct FileSummaries {
  std::vector<WorkerPattern> patterns;  // in input order, unusable files left out
  std::vector<std::string> errors;      // one line per unusable file
  std::vector<std::string> notes;       // e.g. why hardware samples were not used
};

// Hardware samples for a trace once it is read (its pid, its clock); may add a one-line note.
using SamplesProvider = std::function<std::vector<ResourceSamples>(const Trace&, std::string* note)>;

// At most `threads` threads in all: one reader per file at a time, and a gzip inflated on a
// helper thread only when a thread is left over (fewer files than threads). `max_memory_bytes`
// (0: no limit) bounds what the readers hold together: fewer readers run when it is small, and a
// trace whose events would not fit in one reader's share is an error naming the limit.
FileSummaries SummarizeFiles(const std::vector<std::string>& paths, int threads, const SummarizeOptions& options = {},
                             const SamplesProvider& samples_for = nullptr, size_t max_memory_bytes = 0);

// How SummarizeFiles spends its threads and memory (exposed for tests and the bench).
struct ReaderPlan {
  int readers = 1;
  bool inflate_on_helper_thread = false;
  size_t max_event_bytes = 0;  // per reader; 0: no limit
};
ReaderPlan PlanReaders(size_t files, int threads, size_t max_memory_bytes);

// True for names that look like traces we read: *.json, *.json.gz, *.pt.trace.json(.gz).
bool LooksLikeTraceFile(const std::string& path);

}  // namespace eroica
