#include "trace/reader.h"

#include <cctype>
#include <cstring>
#include <filesystem>

#include "trace/byte_source.h"
#include "trace/event_parser.h"
#include "trace/json_splitter.h"

namespace eroica {
namespace {

int ParseDigitsAt(const std::string& text, size_t pos) {
  long value = 0;
  while (pos < text.size() && std::isdigit(static_cast<unsigned char>(text[pos])) && value < 1e8) {
    value = value * 10 + (text[pos++] - '0');
  }
  return static_cast<int>(value);
}

// Events reserved before any is parsed (the vector then grows as events arrive).
constexpr size_t kInitialEvents = 1 << 16;

}  // namespace

int RankFromFileName(const std::string& path) {
  std::string name = std::filesystem::path(path).filename().string();
  std::string lower = name;
  for (char& c : lower) c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
  for (const char* keyword : {"rank", "worker"}) {
    size_t at = lower.rfind(keyword);
    if (at == std::string::npos) continue;
    size_t pos = at + std::strlen(keyword);
    while (pos < lower.size() && (lower[pos] == '-' || lower[pos] == '_')) ++pos;
    if (pos < lower.size() && std::isdigit(static_cast<unsigned char>(lower[pos]))) {
      return ParseDigitsAt(lower, pos);
    }
  }
  int rank = -1;
  for (size_t i = 0; i < name.size(); ++i) {
    if (std::isdigit(static_cast<unsigned char>(name[i])) &&
        (i == 0 || !std::isdigit(static_cast<unsigned char>(name[i - 1])))) {
      rank = ParseDigitsAt(name, i);
    }
  }
  return rank;
}

StatusOr<Trace> ReadTrace(const std::string& path, const ReadOptions& options) {
  StatusOr<std::unique_ptr<ByteSource>> source = OpenByteSource(path, options.inflate_on_helper_thread);
  if (!source.ok()) return source.status();
  Trace trace;
  trace.meta.path = path;
  // A modest start only: the size is the file's claim (a sparse 200 GB file costs nothing on
  // disk), so nothing proportional to it is reserved; the vector grows with events parsed.
  trace.events.reserve(kInitialEvents);
  size_t max_event_bytes = options.max_event_bytes == 0 ? SIZE_MAX : options.max_event_bytes;
  EventParser parser(&trace, options.learn_layouts, max_event_bytes);
  JsonSplitter splitter(source->get(), path, options.chunk_bytes);
  StatusOr<SplitResult> split = splitter.Run(&parser);
  if (!split.ok()) return split.status();
  // Reading stops at the first read past the budget; a file read in fewer reads is judged here.
  if (split->stopped_by_sink || trace.event_bytes() > max_event_bytes) {
    return ErrorStatus("{}: its events need more than the {} MB of memory allowed ({} events kept after {} MB of JSON)",
                       path, options.max_event_bytes >> 20, trace.events.size(), split->bytes_read >> 20);
  }
  trace.stats.input_bytes = split->bytes_read;
  trace.meta.bare_event_list = split->bare_event_list;
  if (split->truncated) {
    trace.stats.truncated = true;
    trace.stats.truncated_at_byte = split->truncated_at_byte;
    if (trace.events.empty()) {
      return ErrorStatus("{}: {} before any complete event", path, split->problem);
    }
    if (trace.stats.first_problem.empty()) trace.stats.first_problem = split->problem;
  }
  trace.events.shrink_to_fit();
  trace.extras.shrink_to_fit();
  if (trace.meta.base_time_ns != 0) {
    for (TraceEvent& event : trace.events) event.ts_ns += trace.meta.base_time_ns;
  }
  if (trace.meta.rank < 0) {
    trace.meta.rank = RankFromFileName(path);
    trace.meta.rank_from_file_name = trace.meta.rank >= 0;
  }
  return trace;
}

std::string DescribeReadProblems(const Trace& trace) {
  const ReadStats& s = trace.stats;
  if (!s.truncated && s.skipped() == 0) return "";
  std::string text;
  if (s.truncated) text += fmt::format("truncated ({}); ", s.first_problem);
  if (s.malformed_events) text += fmt::format("{} malformed events; ", s.malformed_events);
  if (s.missing_timestamp) text += fmt::format("{} events without ts/dur; ", s.missing_timestamp);
  if (s.negative_duration) text += fmt::format("{} negative durations; ", s.negative_duration);
  if (s.absurd_timestamp) text += fmt::format("{} unreadable timestamps; ", s.absurd_timestamp);
  if (!s.truncated && !s.first_problem.empty()) text += fmt::format("first: {}; ", s.first_problem);
  text += fmt::format("kept {} of {} events", s.complete_events, s.events_seen);
  return fmt::format("{}: {}", trace.meta.path, text);
}

}  // namespace eroica
