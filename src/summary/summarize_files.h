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

FileSummaries SummarizeFiles(const std::vector<std::string>& paths, int threads, const SummarizeOptions& options = {},
                             const SamplesProvider& samples_for = nullptr);

// True for names that look like traces we read: *.json, *.json.gz, *.pt.trace.json(.gz).
bool LooksLikeTraceFile(const std::string& path);

}  // namespace eroica
