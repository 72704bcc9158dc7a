// make_big_trace SOURCE OUT.json [--bytes N] [--gzip]: a large trace made of a real one.
//
// The source trace's traceEvents are repeated, byte for byte, as many times as it takes to reach
// N bytes (default 1.1 GB); copy k is shifted in time by k × (the trace's span + 1 ms), and its
// ProfilerStep numbers, correlation / External id / flow ids and Python ids are offset so that
// every copy reads as further iterations of the same run. Everything outside traceEvents
// (metadata, distributedInfo, deviceProperties, trailing keys) is kept once, as it was. With
// --gzip, OUT.json.gz is written too (one gzip member, level 6).
#include <libdeflate.h>
#include <simdjson.h>
#include <zlib.h>

#include <algorithm>
#include <charconv>
#include <cstdio>
#include <cstring>
#include <fstream>
#include <iterator>
#include <limits>
#include <string>
#include <string_view>
#include <vector>

namespace {

enum class Kind : uint8_t { kTs, kId, kStep };

struct Patch {
  size_t offset;  // in the events text
  size_t length;
  Kind kind;
};

struct Template {
  std::string prefix;  // up to and including '['
  std::string events;  // the array's inside
  std::string suffix;  // from ']' on
  std::vector<Patch> patches;
  int64_t min_ts_us = std::numeric_limits<int64_t>::max();
  int64_t max_end_us = std::numeric_limits<int64_t>::min();
  int64_t max_id = 0;
  int64_t min_step = std::numeric_limits<int64_t>::max();
  int64_t max_step = std::numeric_limits<int64_t>::min();
};

[[noreturn]] void Die(const std::string& why) {
  std::fprintf(stderr, "make_big_trace: %s\n", why.c_str());
  std::exit(1);
}

std::string ReadAll(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  if (!in) Die(path + ": cannot open");
  std::string bytes((std::istreambuf_iterator<char>(in)), {});
  if (bytes.size() < 18 || static_cast<unsigned char>(bytes[0]) != 0x1f ||
      static_cast<unsigned char>(bytes[1]) != 0x8b) {
    return bytes;
  }
  uint32_t isize = 0;
  std::memcpy(&isize, bytes.data() + bytes.size() - 4, 4);
  std::string out(isize, '\0');
  libdeflate_decompressor* d = libdeflate_alloc_decompressor();
  size_t got = 0;
  if (libdeflate_gzip_decompress(d, bytes.data(), bytes.size(), out.data(), out.size(), &got) != LIBDEFLATE_SUCCESS) {
    Die(path + ": cannot inflate (sources over 4 GB are not supported)");
  }
  libdeflate_free_decompressor(d);
  out.resize(got);
  return out;
}

// The integer part of a JSON number token, or nullopt.
std::optional<int64_t> IntegerPart(std::string_view token) {
  int64_t value = 0;
  auto [ptr, ec] = std::from_chars(token.data(), token.data() + token.size(), value);
  if (ec != std::errc() || ptr == token.data()) return std::nullopt;
  return value;
}

void AddPatch(Template* t, const char* base, std::string_view token, Kind kind) {
  t->patches.push_back({static_cast<size_t>(token.data() - base), token.size(), kind});
}

void ScanArgs(simdjson::ondemand::object args, const char* base, Template* t) {
  for (auto field : args) {
    std::string_view key;
    simdjson::ondemand::value v;
    if (field.unescaped_key().get(key) || field.value().get(v)) return;
    if (key != "correlation" && key != "External id" && key != "Python id" && key != "Python parent id") {
      continue;
    }
    std::string_view token = v.raw_json_token();
    while (!token.empty() && (token.back() == ' ' || token.back() == '\n' || token.back() == '\r')) {
      token.remove_suffix(1);
    }
    std::optional<int64_t> id = IntegerPart(token);
    if (!id || *id < 0 || token.find('.') != std::string_view::npos) continue;
    t->max_id = std::max(t->max_id, *id);
    AddPatch(t, base, token, Kind::kId);
  }
}

std::string_view TrimToken(std::string_view token) {
  while (!token.empty() && std::strchr(" \n\r\t", token.back()) != nullptr) token.remove_suffix(1);
  return token;
}

// Records where each event's shiftable values sit in `t->events`.
void ScanEvents(Template* t) {
  simdjson::padded_string padded(t->events.size() + 2);
  padded.data()[0] = '[';
  std::memcpy(padded.data() + 1, t->events.data(), t->events.size());
  padded.data()[t->events.size() + 1] = ']';
  const char* base = padded.data() + 1;
  simdjson::ondemand::parser parser;
  simdjson::ondemand::document doc;
  simdjson::ondemand::array events;
  if (parser.iterate(padded).get(doc) || doc.get_array().get(events)) Die("traceEvents is not an array");
  for (auto element : events) {
    simdjson::ondemand::object event;
    if (element.get_object().get(event)) Die("an event is not an object");
    int64_t ts = 0, dur = 0;
    for (auto field : event) {
      std::string_view key;
      simdjson::ondemand::value v;
      if (field.unescaped_key().get(key) || field.value().get(v)) Die("bad event");
      if (key == "ts" || key == "dur" || key == "id") {
        std::string_view token = TrimToken(v.raw_json_token());
        std::optional<int64_t> number = IntegerPart(token);
        if (!number) continue;
        if (key == "ts") {
          ts = *number;
          AddPatch(t, base, token, Kind::kTs);
        } else if (key == "dur") {
          dur = *number;
        } else if (*number >= 0 && token.find('.') == std::string_view::npos) {
          t->max_id = std::max(t->max_id, *number);
          AddPatch(t, base, token, Kind::kId);
        }
      } else if (key == "name") {
        std::string_view token = TrimToken(v.raw_json_token());
        constexpr std::string_view kStep = "\"ProfilerStep#";
        if (!token.starts_with(kStep)) continue;
        std::optional<int64_t> step = IntegerPart(token.substr(kStep.size()));
        if (!step) continue;
        t->min_step = std::min(t->min_step, *step);
        t->max_step = std::max(t->max_step, *step);
        AddPatch(t, base, token, Kind::kStep);
      } else if (key == "args") {
        simdjson::ondemand::object args;
        if (!v.get_object().get(args)) ScanArgs(args, base, t);
      }
    }
    if (ts > 0) {
      t->min_ts_us = std::min(t->min_ts_us, ts);
      t->max_end_us = std::max(t->max_end_us, ts + dur);
    }
  }
  std::sort(t->patches.begin(), t->patches.end(), [](const Patch& a, const Patch& b) { return a.offset < b.offset; });
}

Template MakeTemplate(std::string text) {
  simdjson::padded_string padded(text);
  simdjson::ondemand::parser parser;
  simdjson::ondemand::document doc;
  simdjson::ondemand::object top;
  if (parser.iterate(padded).get(doc) || doc.get_object().get(top)) {
    Die("the source must be a Kineto trace object {\"traceEvents\": [...], ...}");
  }
  std::string_view array;
  for (auto field : top) {
    std::string_view key;
    if (field.unescaped_key().get(key)) Die("bad top-level key");
    if (key != "traceEvents") continue;
    simdjson::ondemand::array events;
    if (field.value().get_array().get(events) || events.raw_json().get(array)) Die("bad traceEvents");
    break;
  }
  if (array.empty()) Die("no traceEvents");
  size_t open = static_cast<size_t>(array.data() - padded.data());
  size_t close = open + array.size() - 1;
  while (close > open && text[close] != ']') --close;
  Template t;
  t.prefix = text.substr(0, open + 1);
  t.events = text.substr(open + 1, close - open - 1);
  t.suffix = text.substr(close);
  ScanEvents(&t);
  return t;
}

// Writes to a plain file and, optionally, a gzip stream at the same time.
class Sink {
 public:
  Sink(const std::string& path, bool gzip) {
    plain_ = std::fopen(path.c_str(), "wb");
    if (plain_ == nullptr) Die(path + ": cannot create");
    if (gzip) {
      gz_ = gzopen((path + ".gz").c_str(), "wb6");
      if (gz_ == nullptr) Die(path + ".gz: cannot create");
      gzbuffer(gz_, 1 << 20);
    }
  }
  void Write(std::string_view bytes) {
    buffer_.append(bytes);
    if (buffer_.size() >= (4 << 20)) Flush();
  }
  void Close() {
    Flush();
    if (std::fclose(plain_) != 0) Die("write failed");
    if (gz_ != nullptr && gzclose(gz_) != Z_OK) Die("gzip write failed");
  }
  size_t written() const { return written_ + buffer_.size(); }

 private:
  void Flush() {
    if (std::fwrite(buffer_.data(), 1, buffer_.size(), plain_) != buffer_.size()) Die("write failed");
    if (gz_ != nullptr && gzwrite(gz_, buffer_.data(), static_cast<unsigned>(buffer_.size())) <= 0) {
      Die("gzip write failed");
    }
    written_ += buffer_.size();
    buffer_.clear();
  }
  FILE* plain_ = nullptr;
  gzFile gz_ = nullptr;
  std::string buffer_;
  size_t written_ = 0;
};

// The token shifted: integer part + delta, fraction kept as written.
void AppendShifted(std::string_view token, int64_t delta, std::string* out) {
  size_t digits_end = token.find_first_of(".eE");
  if (digits_end == std::string_view::npos) digits_end = token.size();
  int64_t value = *IntegerPart(token.substr(0, digits_end));
  char number[32];
  auto [end, ec] = std::to_chars(number, number + sizeof(number), value + delta);
  out->append(number, end);
  out->append(token.substr(digits_end));
}

void WriteCopy(const Template& t, int64_t copy, Sink* sink, std::string* scratch) {
  int64_t span_us = t.max_end_us - t.min_ts_us + 1000;
  int64_t ts_delta = copy * span_us;
  int64_t id_delta = copy * (t.max_id + 1);
  int64_t step_delta = t.max_step >= t.min_step ? copy * (t.max_step - t.min_step + 1) : 0;
  scratch->clear();
  size_t cursor = 0;
  for (const Patch& p : t.patches) {
    scratch->append(t.events, cursor, p.offset - cursor);
    std::string_view token(t.events.data() + p.offset, p.length);
    switch (p.kind) {
      case Kind::kTs:
        AppendShifted(token, ts_delta, scratch);
        break;
      case Kind::kId:
        AppendShifted(token, id_delta, scratch);
        break;
      case Kind::kStep: {
        constexpr size_t kQuotedPrefix = 14;  // "ProfilerStep#
        scratch->append(token.substr(0, kQuotedPrefix));
        AppendShifted(token.substr(kQuotedPrefix, token.size() - kQuotedPrefix - 1), step_delta, scratch);
        scratch->push_back('"');
        break;
      }
    }
    cursor = p.offset + p.length;
    if (scratch->size() >= (8 << 20)) {
      sink->Write(*scratch);
      scratch->clear();
    }
  }
  scratch->append(t.events, cursor);
  sink->Write(*scratch);
}

}  // namespace

int main(int argc, char** argv) {
  std::string source, output;
  size_t target_bytes = 1100ull << 20;
  bool gzip = false;
  for (int i = 1; i < argc; ++i) {
    std::string_view arg = argv[i];
    if (arg == "--bytes" && i + 1 < argc) {
      target_bytes = std::stoull(argv[++i]);
    } else if (arg == "--gzip") {
      gzip = true;
    } else if (source.empty()) {
      source = arg;
    } else {
      output = arg;
    }
  }
  if (source.empty() || output.empty()) Die("usage: make_big_trace SOURCE OUT.json [--bytes N] [--gzip]");
  Template t = MakeTemplate(ReadAll(source));
  if (t.min_ts_us > t.max_end_us) Die("the source has no timed events");
  size_t copies = std::max<size_t>(1, (target_bytes + t.events.size() - 1) / t.events.size());
  Sink sink(output, gzip);
  sink.Write(t.prefix);
  std::string scratch;
  for (size_t k = 0; k < copies; ++k) {
    if (k > 0) sink.Write(",");
    WriteCopy(t, static_cast<int64_t>(k), &sink, &scratch);
  }
  sink.Write(t.suffix);
  size_t total = sink.written();
  sink.Close();
  std::printf("{\"source\": \"%s\", \"output\": \"%s\", \"copies\": %zu, \"bytes\": %zu, \"patches_per_copy\": %zu}\n",
              source.c_str(), output.c_str(), copies, total, t.patches.size());
  return 0;
}
