#include "summary/fuzz_input.h"

#include <fstream>

#include "summary/pattern_file.h"
#include "summary/summarizer.h"
#include "trace/reader.h"

namespace eroica {

bool SummarizeFuzzInput(std::string_view bytes, const std::string& scratch_path) {
  {
    std::ofstream out(scratch_path, std::ios::binary | std::ios::trunc);
    out.write(bytes.data(), static_cast<std::streamsize>(bytes.size()));
  }
  return SummarizeFuzzFile(scratch_path, {.chunk_bytes = 256});
}

bool SummarizeFuzzFile(const std::string& path, const ReadOptions& options) {
  StatusOr<Trace> trace = ReadTrace(path, options);
  if (!trace.ok()) return false;
  StatusOr<Summary> summary = Summarize(*trace);
  if (!summary.ok()) return false;
  PatternWriter writer;
  writer.Add(summary->pattern);
  return !writer.Finish().empty();
}

}  // namespace eroica
