#include "report/annotate.h"

#include <fmt/core.h>
#include <unistd.h>
#include <zlib.h>

#include <cstdio>
#include <memory>
#include <nlohmann/json.hpp>
#include <utility>

#include "base/file_util.h"
#include "report/verdict.h"
#include "trace/byte_source.h"
#include "trace/json_splitter.h"

namespace eroica {
namespace {

using nlohmann::json;

// Microseconds with exact three decimals from integer nanoseconds (a double would round).
std::string Micros(int64_t ns) {
  std::string sign = ns < 0 ? "-" : "";
  uint64_t a = ns < 0 ? static_cast<uint64_t>(-(ns + 1)) + 1 : static_cast<uint64_t>(ns);
  return fmt::format("{}{}.{:03}", sign, a / 1000, a % 1000);
}

std::string Dump(const json& j) { return j.dump(-1, ' ', false, json::error_handler_t::replace); }

// An event whose ts (and dur) are spliced in as exact decimal text.
std::string TimedEvent(const json& event, int64_t ts_ns, int64_t dur_ns, bool with_duration) {
  std::string text = Dump(event);
  text.pop_back();  // '}'
  text += ",\"ts\":" + Micros(ts_ns);
  if (with_duration) text += ",\"dur\":" + Micros(dur_ns);
  return text + "}";
}

std::string TrackName(const FindingMarks& m, int total_workers) {
  std::string sentence = FindingSentence(m.finding, total_workers);
  return fmt::format("finding {}: {}", m.index, sentence);
}

// The annotated trace, written through a private temporary (base/file_util.h) and renamed into
// place; gzip goes through a second descriptor of the same temporary.
class Output {
 public:
  static StatusOr<std::unique_ptr<Output>> Open(const std::string& path) {
    StatusOr<AtomicFileWriter> writer = AtomicFileWriter::Create(path);
    if (!writer.ok()) return writer.status();
    auto out = std::unique_ptr<Output>(new Output(path, std::move(*writer)));
    if (path.ends_with(".gz")) {
      int fd = ::dup(fileno(out->writer_.stream()));
      out->gz_ = fd < 0 ? nullptr : gzdopen(fd, "wb6");
      if (out->gz_ == nullptr) {
        if (fd >= 0) ::close(fd);
        return ErrorStatus("{}: cannot create", out->writer_.temp_path());
      }
    }
    return out;
  }
  ~Output() {
    if (gz_ != nullptr) gzclose(gz_);
  }
  void Write(std::string_view text) {
    if (failed_ || text.empty()) return;
    size_t written =
        gz_ != nullptr ? static_cast<size_t>(std::max(0, gzwrite(gz_, text.data(), static_cast<unsigned>(text.size()))))
                       : std::fwrite(text.data(), 1, text.size(), writer_.stream());
    failed_ = written != text.size();
  }
  Status Commit() {
    bool closed = gz_ == nullptr || gzclose(gz_) == Z_OK;
    gz_ = nullptr;
    if (failed_ || !closed) return ErrorStatus("{}: write failed (disk full?)", path_);
    return writer_.Commit();
  }

 private:
  Output(std::string path, AtomicFileWriter writer) : path_(std::move(path)), writer_(std::move(writer)) {}
  std::string path_;
  AtomicFileWriter writer_;
  bool failed_ = false;
  gzFile gz_ = nullptr;
};

// Copies the events through as raw text and keeps the other top-level values for the end.
class CopySink : public TraceChunkSink {
 public:
  explicit CopySink(Output* out) : out_(out) {}
  void OnEventChunk(std::string_view array, size_t, const std::vector<uint32_t>& offsets, const std::vector<uint32_t>&,
                    int64_t) override {
    if (array.size() <= 2) return;
    if (events_ > 0) out_->Write(",\n");
    out_->Write(array.substr(1, array.size() - 2));
    events_ += static_cast<int64_t>(offsets.size());
  }
  void OnTopLevelValue(std::string_view key, std::string_view raw_value) override {
    if (key == "traceEvents") return;  // not an array: nothing we can copy as events
    others_.emplace_back(key, raw_value);
  }
  int64_t events() const { return events_; }
  const std::vector<std::pair<std::string, std::string>>& others() const { return others_; }

 private:
  Output* out_;
  int64_t events_ = 0;
  std::vector<std::pair<std::string, std::string>> others_;
};

}  // namespace

std::string AnnotationEventsJson(const AnnotationPlan& plan, int total_workers, int64_t* count) {
  std::vector<std::string> events;
  events.push_back(
      Dump({{"ph", "M"}, {"name", "process_name"}, {"pid", kEroicaPid}, {"tid", 0}, {"args", {{"name", "eroica"}}}}));
  events.push_back(Dump(
      {{"ph", "M"}, {"name", "process_sort_index"}, {"pid", kEroicaPid}, {"tid", 0}, {"args", {{"sort_index", -1}}}}));
  int64_t window_ns = plan.window_end_ns - plan.window_start_ns;
  for (const FindingMarks& m : plan.findings) {
    const Finding& f = m.finding;
    std::string track = TrackName(m, total_workers);
    events.push_back(Dump(
        {{"ph", "M"}, {"name", "thread_name"}, {"pid", kEroicaPid}, {"tid", m.index}, {"args", {{"name", track}}}}));
    std::string text = "eroica: " + FindingSentence(f, total_workers);
    if (!m.names_this_rank)
      text += fmt::format(" (this trace is rank {}; the finding is about other ranks)", plan.rank);
    json instant = {{"ph", "i"},
                    {"s", "g"},
                    {"cat", "eroica"},
                    {"name", text},
                    {"pid", kEroicaPid},
                    {"tid", m.index},
                    {"args",
                     {{"evidence", f.evidence},
                      {"next", f.action},
                      {"function", f.function},
                      {"impact_ms_per_iter", f.impact_s_per_iter * 1e3},
                      {"workers", f.workers},
                      {"critical_path_share_here", window_ns > 0 ? static_cast<double>(m.owned_ns) / window_ns : 0.0},
                      {"marked_by", m.by_function ? "function" : "category"}}}};
    events.push_back(TimedEvent(instant, plan.window_start_ns - plan.base_time_ns, 0, false));
    std::string name = m.by_function ? f.function : std::string(Name(f.category)) + " " + InParentheses(f.function);
    json mark = {
        {"ph", "X"},      {"cat", "eroica"},
        {"name", name},   {"pid", kEroicaPid},
        {"tid", m.index}, {"args", {{"finding", m.index}, {"scope", Name(f.scope)}, {"category", Name(f.category)}}}};
    for (const Span& s : m.marks) {
      events.push_back(TimedEvent(mark, s.start_ns - plan.base_time_ns, s.end_ns - s.start_ns, true));
    }
  }
  *count = static_cast<int64_t>(events.size());
  std::string out;
  for (size_t i = 0; i < events.size(); ++i) out += (i ? ",\n" : "") + events[i];
  return out;
}

StatusOr<AnnotateResult> WriteAnnotatedTrace(const std::string& trace_path, const AnnotationPlan& plan,
                                             int total_workers, const std::string& output_path) {
  StatusOr<std::unique_ptr<ByteSource>> source = OpenByteSource(trace_path);
  if (!source.ok()) return source.status();
  StatusOr<std::unique_ptr<Output>> out = Output::Open(output_path);
  if (!out.ok()) return out.status();
  (*out)->Write("{\"traceEvents\":[\n");
  CopySink sink(out->get());
  JsonSplitter splitter(source->get(), trace_path);
  StatusOr<SplitResult> split = splitter.Run(&sink);
  if (!split.ok()) return split.status();
  AnnotateResult result;
  result.events_copied = sink.events();
  result.input_truncated = split->truncated;
  std::string added = AnnotationEventsJson(plan, total_workers, &result.events_added);
  if (sink.events() > 0 && !added.empty()) (*out)->Write(",\n");
  (*out)->Write(added);
  (*out)->Write("\n]");
  for (const auto& [key, raw] : sink.others()) (*out)->Write(fmt::format(",\n\"{}\":{}", key, raw));
  (*out)->Write("}\n");
  EROICA_RETURN_IF_ERROR((*out)->Commit());
  return result;
}

}  // namespace eroica
