#include "summary/critical_path.h"

#include <gtest/gtest.h>

#include <random>
#include <set>

namespace eroica {

// Readable failure messages (found by argument-dependent lookup).
void PrintTo(const Span& s, std::ostream* os) { *os << "[" << s.start_ns << "," << s.end_ns << ")=" << s.function; }

namespace {

TEST(InnermostTimelineTest, NestedSpansResolveToTheInnermost) {
  // outer 0..100 (1) > middle 10..50 (2) > inner 20..30 (3); sibling 60..70 (4).
  SpanList timeline = InnermostTimeline({{0, 100, 1}, {10, 50, 2}, {20, 30, 3}, {60, 70, 4}});
  SpanList expected = {{0, 10, 1}, {10, 20, 2}, {20, 30, 3}, {30, 50, 2}, {50, 60, 1}, {60, 70, 4}, {70, 100, 1}};
  EXPECT_EQ(timeline, expected);
}

TEST(InnermostTimelineTest, EqualStartsPreferTheShorterSpanAndGapsStayEmpty) {
  SpanList timeline = InnermostTimeline({{0, 10, 1}, {0, 5, 2}, {20, 30, 3}, {-5, -1, 4}});
  SpanList expected = {{-5, -1, 4}, {0, 5, 2}, {5, 10, 1}, {20, 30, 3}};
  EXPECT_EQ(timeline, expected);
}

TEST(InnermostTimelineTest, OverlappingStreamsTakeTheLatestStart) {
  SpanList timeline = InnermostTimeline({{0, 50, 1}, {30, 80, 2}});
  SpanList expected = {{0, 30, 1}, {30, 80, 2}};
  EXPECT_EQ(timeline, expected);
}

// At every instant the timeline names the active span that started last (on equal starts,
// the one that ends first), whatever the nesting: checked instant by instant on random spans.
TEST(InnermostTimelineTest, RandomOverlapsMatchTheDefinitionAtEveryInstant) {
  std::mt19937 rng(7);
  for (int round = 0; round < 200; ++round) {
    SpanList spans;
    std::set<std::pair<int64_t, int64_t>> taken;  // equal spans would tie: none are drawn
    int count = 1 + static_cast<int>(rng() % 12);
    for (uint32_t f = 0; static_cast<int>(f) < count; ++f) {
      int64_t start = rng() % 60, end = start + 1 + rng() % 30;
      if (taken.insert({start, end}).second) spans.push_back({start, end, f});
    }
    std::vector<int64_t> got(100, -1), want(100, -1);
    for (const Span& s : InnermostTimeline(spans)) {
      for (int64_t t = s.start_ns; t < s.end_ns; ++t) got[t] = s.function;
    }
    for (int64_t t = 0; t < 100; ++t) {
      const Span* best = nullptr;
      for (const Span& s : spans) {
        if (s.start_ns > t || s.end_ns <= t) continue;
        if (best == nullptr || s.start_ns > best->start_ns ||
            (s.start_ns == best->start_ns && s.end_ns < best->end_ns)) {
          best = &s;
        }
      }
      if (best != nullptr) want[t] = best->function;
    }
    ASSERT_EQ(got, want) << "round " << round;
  }
}

TEST(PaintCriticalPathTest, HigherLayersHideLowerOnesAndGapsAreFilled) {
  std::vector<SpanList> layers = {
      {{100, 300, 1}},               // compute
      {{250, 400, 2}},               // memory: exposed 300..400
      {{350, 600, 3}},               // communication: exposed 400..600
      {{0, 1000, 4}, {600, 800, 5}}  // host ranges: outer one, inner 600..800
  };
  SpanList path = PaintCriticalPath(layers, 0, 1000, 9);
  SpanList expected = {{0, 100, 4}, {100, 300, 1}, {300, 400, 2}, {400, 600, 3}, {600, 800, 5}, {800, 1000, 4}};
  EXPECT_EQ(path, expected);
  int64_t total = 0;
  for (const Span& s : path) total += s.end_ns - s.start_ns;
  EXPECT_EQ(total, 1000);
}

TEST(PaintCriticalPathTest, ClipsToTheWindowAndFillsIdleTime) {
  SpanList path = PaintCriticalPath({{{-50, 20, 1}, {90, 150, 2}}}, 0, 100, 7);
  SpanList expected = {{0, 20, 1}, {20, 90, 7}, {90, 100, 2}};
  EXPECT_EQ(path, expected);
}

}  // namespace
}  // namespace eroica
