// The in-memory form of one worker's trace: small plain events with interned strings and
// integer nanoseconds, the trace's metadata, and the reader's data-quality counters.
#pragma once

#include <cstdint>
#include <string>
#include <unordered_map>
#include <vector>

#include "base/growable_array.h"
#include "base/interner.h"

namespace eroica {

// One complete ("ph":"X") event as the parsers read it, before it is stored. Instants, flows,
// counters and metadata events are counted but not kept: the critical path needs durations, and
// correlation args link launches to kernels more reliably than flow events do
// (docs/TRACE-FORMAT.md §4).
struct ParsedEvent {
  int64_t ts_ns = 0;  // absolute when the trace has baseTimeNanoseconds or epoch µs
  int64_t dur_ns = 0;
  int64_t pid = 0;  // string pids ("CPU functions", "Spans") map to kStringPidBase + id
  int64_t tid = 0;
  int64_t correlation = -1;  // args.correlation: links cuda_runtime/driver launches to kernels
  int64_t bytes = -1;        // memcpy/memset bytes, or a collective's message size in bytes
  StringId name = 0;
  StringId cat = 0;
  StringId shapes = 0;      // args["Input Dims"] as raw JSON text, for imbalance checks
  StringId collective = 0;  // args["Collective name"] (2024+ traces)
};

// A kept event as stored: 40 bytes, because a trace holds millions and its memory is paid on
// every training node that summarizes. Ids that fit 32 bits are stored as they are (OS pids and
// tids, device and stream numbers, CUPTI's 32-bit correlation ids); the few that do not, and
// the args only some events carry (bytes, shapes, a collective's name), go to Trace::extras.
// Read them through Trace's accessors.
struct TraceEvent {
  int64_t ts_ns = 0;
  int64_t dur_ns = 0;
  StringId name = 0;
  StringId cat = 0;
  int32_t pid = 0;  // an id code: compare for equality; Trace::IdValue gives the number
  int32_t tid = 0;
  int32_t correlation = -1;  // -1: none; kCorrelationInExtra: Trace::Correlation has it
  uint32_t extra = 0;        // 0: none; else 1 + its index in Trace::extras

  int64_t end_ns() const { return ts_ns + dur_ns; }
};
static_assert(sizeof(TraceEvent) == 40);

// What some events carry beyond the common fields.
struct EventExtra {
  int64_t correlation = -1;  // when it did not fit TraceEvent::correlation
  int64_t bytes = -1;
  StringId shapes = 0;
  StringId collective = 0;
};

// A string pid/tid as the parsers read it: kStringPidBase + its interned id (real ids are far
// below; ParsedEvent only).
inline constexpr int64_t kStringPidBase = int64_t{1} << 40;
// pid/tid codes in a TraceEvent: numbers in [-kDirectIdLimit, kDirectIdLimit) are themselves;
// string ids ("Spans") are kStringIdCodeBase + their interned id; any other number gets a code
// from kWideIdBase up (Trace::IdValue maps it back). Equal ids, equal codes.
inline constexpr int64_t kDirectIdLimit = int64_t{1} << 30;
inline constexpr int64_t kStringIdCodeBase = kDirectIdLimit;
inline constexpr int64_t kWideIdBase = kDirectIdLimit + (int64_t{1} << 29);
inline constexpr int32_t kCorrelationInExtra = -2;
inline bool IsStringPid(int64_t code) { return code >= kStringIdCodeBase && code < kWideIdBase; }
inline StringId StringOfIdCode(int64_t code) { return static_cast<StringId>(code - kStringIdCodeBase); }

struct ProcessGroup {
  std::string name;
  std::string description;
  std::vector<int> ranks;
};

struct TraceMetadata {
  std::string path;
  int rank = -1;  // from distributedInfo.rank, else the file name
  bool rank_from_file_name = false;
  int world_size = -1;
  std::string backend;
  std::vector<ProcessGroup> process_groups;
  int64_t base_time_ns = 0;      // baseTimeNanoseconds, already added to every ts_ns
  bool bare_event_list = false;  // CPU-only builds write a bare JSON array (docs/TRACE-FORMAT.md §9)
  std::string device_name;       // deviceProperties[0].name
  int device_count = 0;
  std::string host;  // host_name when the trace carries it
  // From the rank's meta file beside an eroica session's trace: the iterations that ended inside
  // the window (summary/rank_meta.h); empty for other traces.
  std::vector<int64_t> completed_steps;
};

// Data-quality counters: bad input is data, not an error (perfetto's stats table).
struct ReadStats {
  int64_t input_bytes = 0;      // uncompressed JSON bytes read
  int64_t events_seen = 0;      // elements of traceEvents
  int64_t complete_events = 0;  // kept "X" events
  int64_t instant_events = 0;
  int64_t flow_events = 0;
  int64_t metadata_events = 0;
  int64_t counter_events = 0;
  int64_t other_phase_events = 0;
  int64_t malformed_events = 0;   // not an object, bad JSON inside, wrong field types
  int64_t missing_timestamp = 0;  // X without a usable ts or dur
  int64_t negative_duration = 0;
  int64_t absurd_timestamp = 0;  // overflowing numbers
  bool truncated = false;
  int64_t truncated_at_byte = -1;
  std::string first_problem;  // the first malformed example, with its byte offset

  int64_t skipped() const { return malformed_events + missing_timestamp + negative_duration + absurd_timestamp; }
};

struct Trace {
  Interner strings;
  GrowableArray<TraceEvent> events;  // complete events, in file order
  GrowableArray<EventExtra> extras;  // indexed by TraceEvent::extra - 1
  std::vector<int64_t> wide_ids;     // pid/tid numbers outside the direct range, by code
  TraceMetadata meta;
  ReadStats stats;

  std::string_view Str(StringId id) const { return strings.Get(id); }

  // Stores one parsed event; false when an id does not fit any code (2^29 distinct ones).
  bool Add(const ParsedEvent& parsed);
  int64_t Correlation(const TraceEvent& e) const {
    return e.correlation == kCorrelationInExtra ? extras[e.extra - 1].correlation : e.correlation;
  }
  int64_t Bytes(const TraceEvent& e) const { return e.extra == 0 ? -1 : extras[e.extra - 1].bytes; }
  StringId Shapes(const TraceEvent& e) const { return e.extra == 0 ? 0 : extras[e.extra - 1].shapes; }
  StringId Collective(const TraceEvent& e) const { return e.extra == 0 ? 0 : extras[e.extra - 1].collective; }
  // The number a pid/tid code stands for (string pids stay codes).
  int64_t IdValue(int32_t code) const {
    return code >= kWideIdBase ? wide_ids[static_cast<size_t>(code - kWideIdBase)] : code;
  }
  size_t event_bytes() const { return events.size() * sizeof(TraceEvent) + extras.size() * sizeof(EventExtra); }

 private:
  bool IdCode(int64_t id, int32_t* code);
  std::unordered_map<int64_t, int32_t> wide_codes_;
};

}  // namespace eroica
