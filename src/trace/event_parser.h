// Turns chunks of raw trace events into TraceEvents and top-level values into TraceMetadata.
// Each event goes through the fast parser first (fast_event_parser.h); the events it does not
// vouch for are parsed by simdjson on-demand, which decides exactly what is kept and what is
// counted as malformed.
#pragma once

#include <simdjson.h>

#include "trace/fast_event_parser.h"
#include "trace/json_splitter.h"
#include "trace/trace.h"

namespace eroica {

class EventParser : public TraceChunkSink {
 public:
  // Asks for no more input once the kept events take more than `max_event_bytes`.
  explicit EventParser(Trace* trace, bool learn_layouts = true, size_t max_event_bytes = SIZE_MAX)
      : trace_(trace), max_event_bytes_(max_event_bytes), fast_(trace, learn_layouts) {}

  void OnEventChunk(std::string_view array, size_t capacity, const std::vector<uint32_t>& element_offsets,
                    const std::vector<uint32_t>& element_ends, int64_t file_offset) override;
  void OnTopLevelValue(std::string_view key, std::string_view raw_value) override;
  bool parses_in_place() const override { return true; }
  const char* ParseEventInPlace(const char* begin, const char* limit) override;
  bool wants_more() const override { return trace_->event_bytes() <= max_event_bytes_; }

 private:
  enum class Outcome { kKept, kCounted, kMalformed };
  void ParseWithSimdjson(std::string_view array, size_t capacity, uint32_t offset, uint32_t end, int64_t file_offset);
  Outcome ParseEvent(simdjson::ondemand::object object, ParsedEvent* event);
  bool ParseArgs(simdjson::ondemand::object args, ParsedEvent* event);
  // Stores a kept event; an event the trace cannot store is counted as malformed.
  void Keep(const ParsedEvent& event, int64_t file_offset);
  void NoteProblem(int64_t file_offset, std::string_view what);
  void ParseDistributedInfo(std::string_view raw);
  void ParseDeviceProperties(std::string_view raw);

  Trace* trace_;
  size_t max_event_bytes_;
  simdjson::ondemand::parser parser_;
  FastEventParser fast_;
};

}  // namespace eroica
