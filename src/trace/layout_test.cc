// The layout walk (events read along layouts learned from earlier events) must read exactly
// what the full walk reads: on real traces, and on events that match a learned layout's bytes
// up to a point and then differ in what the values are.
#include <fmt/core.h>
#include <gtest/gtest.h>

#include <filesystem>
#include <string>
#include <vector>

#include "base/temp_dir.h"
#include "trace/layout_trie.h"
#include "trace/reader.h"

namespace eroica {
namespace {

std::vector<std::string> Rows(const Trace& t) {
  std::vector<std::string> rows;
  for (const TraceEvent& e : t.events) {
    rows.push_back(fmt::format("{}|{}|{}|{}|{}|{}|{}|{}|{}|{}|{}", t.Str(e.name), t.Str(e.cat), e.ts_ns, e.dur_ns,
                               t.IdValue(e.pid), t.IdValue(e.tid), t.Correlation(e), "", t.Bytes(e), t.Str(t.Shapes(e)),
                               t.Str(t.Collective(e))));
  }
  const ReadStats& s = t.stats;
  rows.push_back(fmt::format("seen {} kept {} malformed {} no-ts {} negative {} absurd {} truncated {}", s.events_seen,
                             s.complete_events, s.malformed_events, s.missing_timestamp, s.negative_duration,
                             s.absurd_timestamp, s.truncated));
  return rows;
}

void ExpectSameBothWays(const std::string& path) {
  StatusOr<Trace> full = ReadTrace(path, {.learn_layouts = false});
  StatusOr<Trace> learned = ReadTrace(path);
  ASSERT_EQ(full.ok(), learned.ok()) << path;
  if (!full.ok()) return;
  std::vector<std::string> want = Rows(*full), got = Rows(*learned);
  ASSERT_EQ(got.size(), want.size()) << path;
  for (size_t i = 0; i < want.size(); ++i) ASSERT_EQ(got[i], want[i]) << path << " row " << i;
}

TEST(LayoutTest, RealTracesReadTheSameBothWays) {
  std::filesystem::path root = std::filesystem::path(EROICA_SHARED_DIR) / "traces";
  if (!std::filesystem::exists(root)) GTEST_SKIP() << "no " << root;
  int files = 0;
  for (const auto& entry : std::filesystem::recursive_directory_iterator(root)) {
    if (!entry.is_regular_file() || entry.path().string().find(".json") == std::string::npos) continue;
    ++files;
    ExpectSameBothWays(entry.path().string());
  }
  EXPECT_GT(files, 0);
}

// One learned layout, then events whose bytes between values are the same but whose values
// are not what the layout saw: each must be read as the full walk reads it.
TEST(LayoutTest, EventsThatLeaveALearnedLayoutReadAsTheFullWalkReadsThem) {
  const std::string head = R"({"ph": "X", "cat": "kernel", "name": )";
  const std::string plain =
      head + R"("k", "pid": 1, "tid": 7, "ts": 100, "dur": 5, "args": {"correlation": 3, "Input Dims": [[2]], )"
             R"("In msg nelems": 4, "dtype": "Float"}})";
  const std::vector<std::string> variants = {
      plain,
      head + R"("k", "pid": "GPU 0", "tid": 7, "ts": 100, "dur": 5, "args": {"correlation": 3}})",  // string pid
      head + R"("k", "pid": 1, "tid": 7, "ts": 100, "dur": 5, "args": null, "correlation": 9})",  // args not an object
      head + R"("k", "pid": 1, "tid": 7, "ts": 100, "dur": 5, "args": {}})",
      head + R"("k", "pid": 1, "tid": 7, "ts": 100, "dur": 5, "args": x"correlation": 3, "Input Dims": [[2]], )"
             R"("In msg nelems": 4, "dtype": "Float"}})",  // not JSON, though the gaps match
      head + R"("k\"q", "pid": 1, "tid": 7, "ts": 100, "dur": 5, "args": {"correlation": 3}})",  // escaped name
      head + R"("k", "pid": 1, "tid": 7, "ts": "100", "dur": 5, "args": {"correlation": 3}})",   // ts as a string
      head + R"("k", "pid": 1, "tid": 7, "ts": 100, "dur": -5, "args": {"correlation": 3}})",    // negative dur
      head + R"("k", "pid": 1, "tid": 7, "ts": 100, "args": {"correlation": 3}})",               // no dur
      head + R"("k", "pid": 1, "tid": 7, "ts": 100, "dur": 5, "args": {"correlation": "x"}})",
      head + R"("k", "pid": 1, "tid": 7, "ts": 100, "dur": 5, "args": {"correlation": 3, "Input Dims": "n/a", )"
             R"("In msg nelems": 4, "dtype": "Half"}})",
      head + R"("k", "pid": 1, "tid": 7, "ts": 100, "dur": 5, "args": {"correlation": 3, "correlation": 4}})",
      head + R"("k", "pid": 1, "tid": 7, "ts": 1e2, "dur": 5, "args": {"correlation": 3}})",
      R"({"ph": "f", "cat": "kernel", "name": "k", "pid": 1, "tid": 7, "ts": 100, "dur": 5, "args": {}})",
      R"({"ph": "XX", "cat": "kernel", "name": "k", "pid": 1, "tid": 7, "ts": 100, "dur": 5, "args": {}})",
      R"({"ph": "X", "cat": "kernex", "name": "k", "pid": 1, "tid": 7, "ts": 100, "dur": 5, "args": {}})",
      R"({"ph": "X", "cat": "kern\u0065l", "name": "k", "pid": 1, "tid": 7, "ts": 100, "dur": 5, "args": {}})",
      R"({"ph": "X", "cat": "a category name longer than a layout holds", "name": "k", "pid": 1, "tid": 7, )"
      R"("ts": 100, "dur": 5, "args": {}})",
      R"({"ph": "X", "cat": "kernel", "name": "k", "pid": 1, "tid": 7, "ts": 100, "dur": 5, "args": {"correlation": 3} })",
      head + R"("k", "pid": 1, "tid": 7, "ts": 100, "dur": 5, "args": {"correlation": 3}, "args": {"bytes": 8}})",
      head + R"("k", "pid": 1, "tid": 7, "ts": 100, "dur": 5, "args": {"correlation": [1, {"a": "}"}]}})",
  };
  std::string text = "[\n";
  for (int round = 0; round < 3; ++round) {  // every variant after layouts of all the others
    for (const std::string& event : variants) text += plain + ",\n" + event + ",\n";
  }
  text += plain + "\n]";
  TempDir dir;
  std::string path = dir.Write("variants.json", text);
  ExpectSameBothWays(path);
  StatusOr<Trace> t = ReadTrace(path);
  ASSERT_TRUE(t.ok());
  // Spot checks that the variants were read as JSON says, not as the layout suggested.
  EXPECT_EQ(t->Bytes(t->events[0]), 16);  // 4 Floats
  EXPECT_EQ(t->Correlation(t->events[0]), 3);
  EXPECT_EQ(t->Str(t->Shapes(t->events[0])), "[[2]]");
  int string_pids = 0, stray_correlations = 0, escaped_names = 0, later_duplicates = 0, eight_bytes = 0;
  for (const TraceEvent& e : t->events) {
    string_pids += e.pid == kStringIdCodeBase + t->strings.Intern("GPU 0");
    stray_correlations += t->Correlation(e) == 9;  // "correlation" after non-object args is no arg
    escaped_names += t->Str(e.name) == "k\"q";
    later_duplicates += t->Correlation(e) == 4;
    eight_bytes += t->Bytes(e) == 8;  // 4 Halfs, or a second args object's "bytes"
  }
  EXPECT_EQ(string_pids, 3);
  EXPECT_EQ(stray_correlations, 0);
  EXPECT_EQ(escaped_names, 3);
  EXPECT_EQ(later_duplicates, 3);
  EXPECT_EQ(eight_bytes, 6);
}

// A cut file: the layout walk must not read a learned gap past the end of the data.
TEST(LayoutTest, ATruncatedTraceReadsTheSameBothWays) {
  std::string event = R"({"ph": "X", "cat": "cpu_op", "name": "aten::mm", "pid": 1, "tid": 2, "ts": 10, "dur": 3, )"
                      R"("args": {"External id": 5}})";
  std::string text = "{\"traceEvents\": [\n";
  for (int i = 0; i < 50; ++i) text += event + ",\n";
  TempDir dir;
  for (size_t cut = text.size() - 3 * event.size(); cut < text.size(); cut += 7) {
    ExpectSameBothWays(dir.Write("cut.json", text.substr(0, cut)));
  }
}

// Events that never repeat a layout (a new args key each) fill the trie; past its bound the
// reader must keep reading every event right, by the full walk.
TEST(LayoutTest, EventsThatNeverRepeatALayoutReadTheSameBothWays) {
  std::string text = "[\n";
  const int count = 20000;
  for (int i = 0; i < count; ++i) {
    text += fmt::format(R"({{"ph": "X", "cat": "cpu_op", "name": "op{}", "pid": 1, "tid": 2, "ts": {}, "dur": 3, )"
                        R"("args": {{"key{}": {}, "correlation": {}}}}})",
                        i % 7, 10 * i, i, i, i);
    text += i + 1 < count ? ",\n" : "\n]";
  }
  TempDir dir;
  std::string path = dir.Write("unique.json", text);
  ExpectSameBothWays(path);
  StatusOr<Trace> t = ReadTrace(path);
  ASSERT_TRUE(t.ok());
  ASSERT_EQ(t->events.size(), static_cast<size_t>(count));
  EXPECT_EQ(t->Correlation(t->events.back()), count - 1);
}

TEST(LayoutTrieTest, LearnsSharedPrefixesOnceAndBoundsItsSize) {
  LayoutTrie trie;
  std::vector<LayoutTrie::Step> a = {{"{\"ph\": ", Field::kPhase}, {", \"ts\": ", Field::kTs}, {"}", Field::kEnd}};
  std::vector<LayoutTrie::Step> b = {{"{\"ph\": ", Field::kPhase}, {", \"dur\": ", Field::kDur}, {"}", Field::kEnd}};
  ASSERT_TRUE(trie.Learn(a));
  ASSERT_TRUE(trie.Learn(a));
  EXPECT_EQ(trie.size(), 4u);  // the root and three nodes
  ASSERT_TRUE(trie.Learn(b));
  EXPECT_EQ(trie.size(), 6u);
  std::string text = "{\"ph\": \"X\", \"dur\": 1}" + std::string(32, ' ');
  uint32_t node = trie.MatchChild(LayoutTrie::kRoot, text.data(), text.data() + 21);
  ASSERT_NE(node, LayoutTrie::kNone);
  EXPECT_EQ(trie.field(node), Field::kPhase);
  const char* next = text.data() + trie.gap_size(node) + 3;  // past "X"
  uint32_t dur = trie.MatchChild(node, next, text.data() + 21);
  ASSERT_NE(dur, LayoutTrie::kNone);
  EXPECT_EQ(trie.field(dur), Field::kDur);
  EXPECT_EQ(trie.MatchChild(node, next, next + 3), LayoutTrie::kNone);  // the gap runs past the limit
  EXPECT_FALSE(trie.Learn({{std::string(LayoutTrie::kMaxGap + 1, ' '), Field::kSkip}}));

  LayoutTrie full;
  std::vector<std::string> gaps;
  for (size_t i = 0; full.size() < LayoutTrie::kMaxNodes; ++i) {
    gaps.push_back(fmt::format(", \"k{}\": ", i));
    full.Learn({{gaps.back(), Field::kSkip}});
  }
  gaps.push_back("overflow");
  EXPECT_FALSE(full.Learn({{gaps.back(), Field::kSkip}}));
  EXPECT_EQ(full.size(), LayoutTrie::kMaxNodes);
}

}  // namespace
}  // namespace eroica
