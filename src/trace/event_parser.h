// Turns chunks of raw trace events into TraceEvents (simdjson on-demand, one reused parser,
// each object's fields walked once in order) and top-level values into TraceMetadata.
#pragma once

#include <simdjson.h>

#include "trace/json_splitter.h"
#include "trace/trace.h"

namespace eroica {

class EventParser : public TraceChunkSink {
 public:
  explicit EventParser(Trace* trace) : trace_(trace) {}

  void OnEventChunk(std::string_view array, size_t capacity,
                    const std::vector<uint32_t>& element_offsets,
                    const std::vector<uint32_t>& element_ends, int64_t file_offset) override;
  void OnTopLevelValue(std::string_view key, std::string_view raw_value) override;

 private:
  enum class Outcome { kKept, kCounted, kMalformed };
  bool ParseArray(std::string_view array, size_t capacity);
  Outcome ParseEvent(simdjson::ondemand::object object, TraceEvent* event);
  bool ParseArgs(simdjson::ondemand::object args, TraceEvent* event);
  void NoteProblem(int64_t file_offset, std::string_view what);
  void ParseDistributedInfo(std::string_view raw);
  void ParseDeviceProperties(std::string_view raw);
  StringId InternName(std::string_view name);

  Trace* trace_;
  simdjson::ondemand::parser parser_;
  std::vector<TraceEvent> pending_;
  std::string scratch_;
};

}  // namespace eroica
