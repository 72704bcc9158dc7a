// The in-memory form of one worker's trace: small plain events with interned strings and
// integer nanoseconds, the trace's metadata, and the reader's data-quality counters.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "base/huge_page_allocator.h"
#include "base/interner.h"

namespace eroica {

// One complete ("ph":"X") event. Instants, flows, counters and metadata events are counted
// but not kept: the critical path needs durations, and correlation args link launches to
// kernels more reliably than flow events do (docs/TRACE-FORMAT.md §4).
struct TraceEvent {
  int64_t ts_ns = 0;  // absolute when the trace has baseTimeNanoseconds or epoch µs
  int64_t dur_ns = 0;
  int64_t pid = 0;  // string pids ("CPU functions", "Spans") map to kStringPidBase + id
  int64_t tid = 0;
  int64_t correlation = -1;  // args.correlation: links cuda_runtime/driver launches to kernels
  int64_t external_id = -1;  // args["External id"]
  int64_t bytes = -1;        // memcpy/memset bytes, or a collective's message size in bytes
  StringId name = 0;
  StringId cat = 0;
  StringId shapes = 0;      // args["Input Dims"] as raw JSON text, for imbalance checks
  StringId collective = 0;  // args["Collective name"] (2024+ traces)

  int64_t end_ns() const { return ts_ns + dur_ns; }
};

inline constexpr int64_t kStringPidBase = int64_t{1} << 40;
inline bool IsStringPid(int64_t pid) { return pid >= kStringPidBase; }

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
  BigVector<TraceEvent> events;  // complete events, in file order
  TraceMetadata meta;
  ReadStats stats;

  std::string_view Str(StringId id) const { return strings.Get(id); }
};

}  // namespace eroica
