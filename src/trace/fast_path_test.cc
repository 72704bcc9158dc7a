// The reader's fast paths (the in-place event parser, the 64-byte block scanner that frames
// chunks) must agree with the exact ones on every input: strings that hold brackets, quotes and
// backslashes, escapes that straddle blocks and reads, events the fast parser refuses.
#include <fmt/core.h>
#include <gtest/gtest.h>

#include <random>
#include <string>
#include <vector>

#include "base/temp_dir.h"
#include "trace/block_scanner.h"
#include "trace/byte_source.h"
#include "trace/fast_event_parser.h"
#include "trace/json_splitter.h"
#include "trace/reader.h"

namespace eroica {
namespace {

// Events whose strings are full of what a framing scanner must not be fooled by.
std::string TrickyEvents(int count) {
  std::string out = "[\n";
  const char* names[] = {
      R"(aten::mm)",
      R"(a \"quoted\" {name} [with] brackets)",
      R"(trailing backslash \\)",
      R"(\\\\\" many escapes \\\"\\)",
      R"(unicode \u00e9t\u00e9 and raw ütf-8 名字)",
      R"(<built-in method numel of Tensor object at 0x7fdc6a2b>)",
  };
  for (int i = 0; i < count; ++i) {
    std::string pad(static_cast<size_t>(i * 7 % 61), ' ');
    out += "  {\"ph\": \"X\",";
    out += pad;
    out += "\"name\": \"" + std::string(names[i % 6]) +
           "\", \"cat\": \"cpu_op\", \"pid\": 1, \"tid\": " + std::to_string(i % 3) +
           ", \"ts\": " + std::to_string(1000 + i) + "." + std::to_string(i % 1000) +
           ", \"dur\": " + std::to_string(i % 17) + ", \"args\": {\"Input Dims\": [[" + std::to_string(i) +
           "], []], \"note\": \"}]\\\"{[\", \"External id\": " + std::to_string(i) + "}}";
    out += i + 1 < count ? ",\n" : "\n";
  }
  out += "]";
  return out;
}

struct Dumped {
  std::vector<std::string> rows;
  int64_t seen = 0, malformed = 0;
};

Dumped Dump(const Trace& t) {
  Dumped d;
  for (const TraceEvent& e : t.events) {
    d.rows.push_back(std::string(t.Str(e.name)) + "|" + std::string(t.Str(t.Shapes(e))) + "|" +
                     std::to_string(e.ts_ns) + "|" + std::to_string(e.dur_ns) + "|" + std::to_string(t.IdValue(e.tid)) +
                     "|" + std::to_string(t.Correlation(e)));
  }
  d.seen = t.stats.events_seen;
  d.malformed = t.stats.malformed_events;
  return d;
}

TEST(FastPathTest, TrickyStringsReadTheSameAtEveryChunkSize) {
  TempDir dir;
  std::string text = TrickyEvents(3000);
  std::string path = dir.Write("tricky.json", text);
  StatusOr<Trace> reference = ReadTrace(path);
  ASSERT_TRUE(reference.ok()) << reference.status().message();
  Dumped expected = Dump(*reference);
  ASSERT_EQ(expected.rows.size(), 3000u);
  EXPECT_EQ(expected.malformed, 0);
  EXPECT_EQ(reference->Str(reference->events[1].name), R"(a "quoted" {name} [with] brackets)");
  EXPECT_EQ(reference->Str(reference->events[3].name), R"(\\" many escapes \"\)");
  EXPECT_EQ(reference->Str(reference->events[4].name), "unicode été and raw ütf-8 名字");
  EXPECT_EQ(reference->Str(reference->events[5].name), "<built-in method numel of Tensor object at 0x>");
  EXPECT_EQ(reference->events[7].ts_ns, 1007700);  // "1007.7"
  for (size_t chunk : {1, 100, 4096, 65536}) {
    StatusOr<Trace> t = ReadTrace(path, {.chunk_bytes = chunk});
    ASSERT_TRUE(t.ok());
    Dumped got = Dump(*t);
    EXPECT_EQ(got.rows, expected.rows) << chunk;
    EXPECT_EQ(got.seen, 3000) << chunk;
  }
}

TEST(FastPathTest, RefusedEventsKeepFileOrderAndExactCounts) {
  TempDir dir;
  // Escaped keys, exponent timestamps, string pids and malformed events make the fast parser
  // hand over to simdjson in the middle of the array.
  std::string text = "[";
  for (int i = 0; i < 400; ++i) {
    if (i) text += ",";
    switch (i % 5) {
      case 0:
        text += R"({"ph":"X","name":"plain)" + std::to_string(i) + R"(","ts":)" + std::to_string(i) +
                R"(,"dur":1,"pid":1,"tid":1})";
        break;
      case 1:
        text += R"({"ph":"X","n\u0061me":"escaped key)" + std::to_string(i) + R"(","ts":)" + std::to_string(i) +
                R"(,"dur":1,"pid":1,"tid":1})";
        break;
      case 2:
        text += R"({"ph":"X","name":"exp)" + std::to_string(i) + R"(","ts":)" + std::to_string(i) +
                R"(e0,"dur":1,"pid":"CPU functions","tid":1})";
        break;
      case 3:
        text += R"({"ph":"X","name":"bad pid)" + std::to_string(i) + R"(","ts":1,"dur":1,"pid":{"a":1},"tid":1})";
        break;
      case 4:
        text += "7";
        break;
    }
  }
  text += "]";
  StatusOr<Trace> t = ReadTrace(dir.Write("mixed.json", text));
  ASSERT_TRUE(t.ok()) << t.status().message();
  EXPECT_EQ(t->stats.events_seen, 400);
  EXPECT_EQ(t->stats.malformed_events, 160);
  ASSERT_EQ(t->events.size(), 240u);
  for (size_t k = 0; k < t->events.size(); ++k) {
    int i = static_cast<int>(k / 3 * 5 + k % 3);
    EXPECT_EQ(t->events[k].ts_ns, i * 1000) << k;
    std::string name(t->Str(t->events[k].name));
    if (i % 5 == 0) {
      EXPECT_EQ(name, "plain" + std::to_string(i));
    }
    if (i % 5 == 1) {
      EXPECT_EQ(name, "escaped key" + std::to_string(i));
    }
    if (i % 5 == 2) {
      EXPECT_TRUE(IsStringPid(t->events[k].pid));
    }
  }
}

// The exact (simdjson) path reads every field as the fast walk does: the same events, once
// plain and once with a name escaped (which the fast walk refuses), give the same TraceEvents.
TEST(FastPathTest, RefusedEventsReadEveryFieldAsTheFastWalkDoes) {
  const std::vector<std::string> bodies = {
      R"("cat": "kernel", "pid": 0, "tid": 7, "ts": 1000.5, "dur": 21.344, )"
      R"("args": {"External id": 15, "correlation": 52, "grid": [56, 2, 1], "Input Dims": [[8, 4], []]}})",
      R"("cat": "cpu_op", "pid": "CPU functions", "tid": 3, "ts": 2000, "dur": 7, )"
      R"("args": {"Collective name": "allreduce", "In msg nelems": 1024, "dtype": "BFloat16"}})",
      R"("cat": "gpu_memcpy", "pid": 1, "tid": 2, "ts": 3000, "dur": 9, "args": {"bytes": 4096}})",
  };
  auto trace_text = [&](const std::string& name) {
    std::string text = "[";
    for (size_t i = 0; i < bodies.size(); ++i) {
      text += (i ? ", " : "") + std::string(R"({"ph": "X", "name": ")") + name + "\", " + bodies[i];
    }
    return text + "]";
  };
  TempDir dir;
  StatusOr<Trace> fast = ReadTrace(dir.Write("plain.json", trace_text("Aop")));
  StatusOr<Trace> exact = ReadTrace(dir.Write("escaped.json", trace_text(R"(\u0041op)")));
  ASSERT_TRUE(fast.ok() && exact.ok());
  ASSERT_EQ(fast->events.size(), bodies.size());
  ASSERT_EQ(exact->events.size(), bodies.size());
  auto row = [](const Trace& t, const TraceEvent& e) {
    return fmt::format(
        "{}|{}|{}|{}|{}|{}|{}|{}|{}|{}", t.Str(e.name), t.Str(e.cat), e.ts_ns, e.dur_ns,
        IsStringPid(e.pid) ? std::string(t.Str(StringOfIdCode(e.pid))) : std::to_string(t.IdValue(e.pid)),
        t.IdValue(e.tid), t.Correlation(e), t.Bytes(e), t.Str(t.Shapes(e)), t.Str(t.Collective(e)));
  };
  for (size_t i = 0; i < bodies.size(); ++i) {
    EXPECT_EQ(row(*exact, exact->events[i]), row(*fast, fast->events[i])) << i;
  }
  EXPECT_EQ(fast->Bytes(fast->events[1]), 2048);  // 1024 BFloat16s
}

// Collects the chunks a splitter hands to a sink that does not parse in place (the path other
// modules use to copy events through).
class ChunkCollector : public TraceChunkSink {
 public:
  void OnEventChunk(std::string_view array, size_t, const std::vector<uint32_t>& offsets,
                    const std::vector<uint32_t>& ends, int64_t) override {
    for (size_t i = 0; i < offsets.size(); ++i) elements.emplace_back(array.substr(offsets[i], ends[i] - offsets[i]));
  }
  void OnTopLevelValue(std::string_view, std::string_view) override {}
  std::vector<std::string> elements;
};

TEST(FastPathTest, ChunkFramingFindsEveryElement) {
  TempDir dir;
  std::string text = TrickyEvents(500);
  // Scalars and nested arrays among the objects take the byte-wise path.
  text.insert(text.size() - 1, ", 7, \"str]ing\", [1, [2, {\"a\": \"]\"}]], {}\n");
  std::string path = dir.Write("chunks.json", text);
  for (size_t chunk : {1, 333, 1 << 20}) {
    StatusOr<std::unique_ptr<ByteSource>> source = OpenByteSource(path);
    ASSERT_TRUE(source.ok());
    ChunkCollector sink;
    JsonSplitter splitter(source->get(), path, chunk);
    StatusOr<SplitResult> result = splitter.Run(&sink);
    ASSERT_TRUE(result.ok());
    EXPECT_FALSE(result->truncated);
    ASSERT_EQ(sink.elements.size(), 504u) << chunk;
    EXPECT_TRUE(sink.elements[0].starts_with("{\"ph\"")) << sink.elements[0];
    EXPECT_TRUE(sink.elements[499].ends_with("}}"));
    EXPECT_EQ(sink.elements[500], "7");
    EXPECT_EQ(sink.elements[501], "\"str]ing\"");
    EXPECT_EQ(sink.elements[502], "[1, [2, {\"a\": \"]\"}]]");
    EXPECT_EQ(sink.elements[503], "{}");
  }
}

// The block scanner against a byte-at-a-time reference on random JSON-ish text (a backslash
// escapes the next byte wherever it is, as in simdjson).
// An event cut by the end of the data read so far, where the bytes past the limit (padding, or
// stale bytes of an earlier read in a reused buffer) happen to continue it: the parser must be
// unsure, never return a position past the limit. A real trace once cut an event right before its
// args, stale bytes there completed it, and the reader's position ran past its data (an abort).
TEST(FastPathTest, AnEventCutAtTheLimitIsUnsureWhateverFollows) {
  const std::string whole =
      R"({"ph": "X", "cat": "cpu_op", "name": "aten::mm", "pid": 1, "tid": 2, "ts": 10.5, "dur": 3, )"
      R"("args": {}})";
  Trace trace;
  FastEventParser parser(&trace);
  for (int learn = 0; learn < 2; ++learn) {  // the second walk follows the learned layout
    std::string buffer = whole + std::string(kJsonPadding, ' ');
    ParsedEvent event;
    FastEventParser::Result result;
    ASSERT_EQ(parser.Parse(buffer.data(), buffer.data() + whole.size(), &event, &result), buffer.data() + whole.size());
  }
  for (size_t cut : {whole.find("\"args\"") + 8, whole.find("{}") + 1, whole.size() - 1}) {
    std::string buffer = whole + std::string(kJsonPadding, ' ');
    ParsedEvent event;
    FastEventParser::Result result;
    const char* end = parser.Parse(buffer.data(), buffer.data() + cut, &event, &result);
    EXPECT_EQ(end, nullptr) << "cut at " << cut << ": " << whole.substr(0, cut);
  }
}

TEST(FastPathTest, BlockScannerMatchesAByteWalk) {
  std::mt19937 random(7);
  const char alphabet[] = "\"\\{}[]a ,:";
  for (int round = 0; round < 200; ++round) {
    std::string text(64 * 8, ' ');
    for (char& c : text) c = alphabet[random() % (sizeof(alphabet) - 1)];
    BlockScanner scanner;
    bool in_string = false, escaped = false;
    for (size_t block = 0; block < text.size(); block += 64) {
      BracketMasks masks = scanner.Next(text.data() + block);
      uint64_t open = 0, close = 0;
      for (int i = 0; i < 64; ++i) {
        char c = text[block + static_cast<size_t>(i)];
        if (escaped) {
          escaped = false;
          continue;
        }
        if (c == '\\') {
          escaped = true;
          continue;
        }
        if (c == '"') {
          in_string = !in_string;
          continue;
        }
        if (in_string) continue;
        if (c == '{' || c == '[') open |= uint64_t{1} << i;
        if (c == '}' || c == ']') close |= uint64_t{1} << i;
      }
      ASSERT_EQ(masks.open, open) << round << " " << block;
      ASSERT_EQ(masks.close, close) << round << " " << block;
    }
  }
}

// The byte walk the skip must agree with: nullptr where a backslash or the end comes before the
// bracket that closes `depth` levels.
const char* SkipByBytes(const char* p, const char* end, int depth) {
  bool in_string = false;
  for (const char* q = p; q < end; ++q) {
    if (*q == '\\') return nullptr;
    if (*q == '"') in_string = !in_string;
    if (in_string) continue;
    if (*q == '{' || *q == '[') ++depth;
    if ((*q == '}' || *q == ']') && --depth <= 0) return depth == 0 ? q + 1 : nullptr;
  }
  return nullptr;
}

TEST(FastPathTest, SkipWithoutEscapesMatchesAByteWalk) {
  std::mt19937 random(11);
  const char alphabet[] = "\"\"{}[]aaaa  ,:\\";
  int found = 0;
  for (int round = 0; round < 4000; ++round) {
    std::string text(static_cast<size_t>(1 + random() % 200), ' ');
    for (char& c : text) c = alphabet[random() % (sizeof(alphabet) - 1)];
    if (round % 2 == 0) std::erase(text, '\\');
    text += std::string(64, '}');  // bytes past `end` that must not count
    const char* begin = text.data();
    const char* end = text.data() + text.size() - 64;
    int depth = static_cast<int>(random() % 3);
    const char* expected = SkipByBytes(begin, end, depth);
    ASSERT_EQ(SkipBracketsWithoutEscapes(begin, end, depth), expected)
        << round << " depth " << depth << ": " << std::string(begin, end);
    found += expected != nullptr;
  }
  EXPECT_GT(found, 400);  // the walk reached its bracket often enough to test where it lands
}

TEST(FastPathTest, SkipWithoutEscapesOnKinetoValues) {
  // Where the skip lands in `value`, or npos; the loads may run 31 bytes past the end.
  auto skip = [](const std::string& value, int depth) {
    std::string padded = value + std::string(32, ']');
    const char* after = SkipBracketsWithoutEscapes(padded.data(), padded.data() + value.size(), depth);
    return after == nullptr ? std::string::npos : static_cast<size_t>(after - padded.data());
  };
  const std::string flow = R"( "id": 863350, "pid": 0, "tid": 7, "ts": 1683564902133354,
    "cat": "ac2g", "name": "a}c]2g", "bp": "e"
  }, {"ph": "X"})";
  EXPECT_EQ(skip(flow, 1), flow.find("}, {") + 1);
  const std::string dims = R"([[8, 1024], [], [1024, 4096]], "Input type": ["float", "[]"]})";
  EXPECT_EQ(skip(dims, 0), dims.find(", \"Input"));
  EXPECT_EQ(skip(R"(["a\"]", 1])", 0), std::string::npos);  // an escape: BlockScanner's walk decides
  EXPECT_EQ(skip(R"([1, 2)", 0), std::string::npos);        // the end comes first
}

}  // namespace
}  // namespace eroica
