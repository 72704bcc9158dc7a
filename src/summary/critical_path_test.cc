#include "summary/critical_path.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <cstdint>
#include <random>
#include <set>
#include <tuple>

namespace eroica {

// Readable failure messages (found by argument-dependent lookup).
void PrintTo(const Span& s, std::ostream* os) { *os << "[" << s.start_ns << "," << s.end_ns << ")=" << s.function; }

namespace {

// The definition of the owner of instant t among `spans`, each cut to [lo, hi): the active span
// that started last, on equal starts the one that ends first, on equal bounds the later in file
// order. -1 when none is active.
int64_t InnermostAt(const SpanList& spans, int64_t t, int64_t lo = INT64_MIN, int64_t hi = INT64_MAX) {
  const Span* best = nullptr;
  int64_t best_start = 0, best_end = 0;
  for (const Span& s : spans) {
    int64_t start = std::max(s.start_ns, lo), end = std::min(s.end_ns, hi);
    if (start > t || end <= t) continue;
    if (best == nullptr || start > best_start || (start == best_start && end <= best_end)) {
      best = &s;
      best_start = start;
      best_end = end;
    }
  }
  return best == nullptr ? -1 : static_cast<int64_t>(best->function);
}

// Who owns each instant of [0, length) in a painted timeline (-1: nobody).
std::vector<int64_t> OwnerAtEveryInstant(const SpanList& pieces, int64_t length) {
  std::vector<int64_t> owners(static_cast<size_t>(length), -1);
  for (const Span& s : pieces) {
    for (int64_t t = std::max<int64_t>(s.start_ns, 0); t < std::min(s.end_ns, length); ++t) owners[t] = s.function;
  }
  return owners;
}

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
    std::vector<int64_t> want(100, -1);
    for (int64_t t = 0; t < 100; ++t) want[t] = InnermostAt(spans, t);
    ASSERT_EQ(OwnerAtEveryInstant(InnermostTimeline(spans), 100), want) << "round " << round;
  }
}

// Spans come as a few ascending runs (their heads scanned), as many runs (merged through a heap),
// or in no order at all (sorted): each way gives the definition's owner at every instant.
TEST(InnermostTimelineTest, AnyNumberOfRunsMatchesTheDefinition) {
  std::mt19937 rng(3);
  for (size_t runs : {size_t{1}, size_t{3}, size_t{8}, size_t{9}, size_t{20}, size_t{400}}) {
    std::vector<SpanList> by_run(runs);
    std::set<std::pair<int64_t, int64_t>> taken;
    uint32_t function = 0;
    for (int i = 0; i < 400; ++i) {
      int64_t start = rng() % 1000, end = start + 1 + rng() % 60;
      if (taken.insert({start, end}).second) by_run[rng() % runs].push_back({start, end, ++function});
    }
    SpanList spans;  // each run ascending, the runs one after another (400 runs: no order at all)
    for (SpanList& run : by_run) {
      std::sort(run.begin(), run.end(), [](const Span& x, const Span& y) {
        return x.start_ns != y.start_ns ? x.start_ns < y.start_ns : x.end_ns > y.end_ns;
      });
      spans.insert(spans.end(), run.begin(), run.end());
    }
    std::vector<int64_t> want(1100, -1);
    for (int64_t t = 0; t < 1100; ++t) want[t] = InnermostAt(spans, t);
    ASSERT_EQ(OwnerAtEveryInstant(InnermostTimeline(spans), 1100), want) << runs << " runs";
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

// At every instant of the window the path names the innermost span of the highest layer active
// then, or the fill where none is: checked instant by instant on random layers (empty ones
// among them), whose spans may reach outside the window and so tie within it.
TEST(PaintCriticalPathTest, RandomLayersMatchTheDefinitionAtEveryInstant) {
  std::mt19937 rng(5);
  for (int round = 0; round < 300; ++round) {
    std::vector<SpanList> layers(1 + rng() % 5);
    std::set<std::pair<int64_t, int64_t>> taken;  // equal spans in one layer would tie: none drawn
    uint32_t function = 0;
    for (SpanList& layer : layers) {
      taken.clear();
      int count = rng() % 3 == 0 ? 0 : static_cast<int>(rng() % 10);
      for (int i = 0; i < count; ++i) {
        int64_t start = static_cast<int64_t>(rng() % 110) - 5, end = start + 1 + static_cast<int64_t>(rng() % 35);
        if (taken.insert({start, end}).second) layer.push_back({start, end, ++function});
      }
    }
    int64_t window_start = rng() % 10, window_end = 90 + rng() % 15;
    std::vector<int64_t> want(120, -1);
    for (int64_t t = window_start; t < window_end; ++t) {
      want[t] = 999;
      for (const SpanList& layer : layers) {  // the highest layer active then owns it
        if (int64_t owner = InnermostAt(layer, t, window_start, window_end); owner >= 0) {
          want[t] = owner;
          break;
        }
      }
    }
    ASSERT_EQ(OwnerAtEveryInstant(PaintCriticalPath(layers, window_start, window_end, 999), 120), want)
        << "round " << round;
  }
}

// Painting slice by slice must give the whole window's path exactly, whatever the slices cut:
// nested and overlapping spans, equal spans in one layer (file order decides), spans that start
// before or end after the window, and spans much longer than a slice.
TEST(PaintCriticalPathBySlicesTest, EqualsTheWholeWindowsPathOnRandomLayers) {
  std::mt19937 rng(11);
  for (int round = 0; round < 300; ++round) {
    size_t layer_count = 1 + rng() % 4;
    std::vector<SpanList> layers(layer_count);
    uint32_t function = 0;
    for (SpanList& layer : layers) {
      int count = static_cast<int>(rng() % 40);
      for (int i = 0; i < count; ++i) {
        int64_t start = static_cast<int64_t>(rng() % 1200) - 100;
        int64_t length = rng() % 4 == 0 ? static_cast<int64_t>(rng() % 900) : static_cast<int64_t>(rng() % 40);
        if (rng() % 5 == 0 && !layer.empty()) {  // an exact twin of an earlier span
          layer.push_back({layer[rng() % layer.size()].start_ns, 0, ++function});
          layer.back().end_ns = layer.back().start_ns + length;
          continue;
        }
        layer.push_back({start, start + length, ++function});
      }
    }
    int64_t window_start = static_cast<int64_t>(rng() % 50), window_end = 900 + static_cast<int64_t>(rng() % 200);
    SpanList whole = PaintCriticalPath(layers, window_start, window_end, 999);
    for (size_t count : {1u, 2u, 3u, 7u, 64u, 1000u}) {
      TimeSlices slices = TimeSlices::About(window_start, window_end, count);
      auto gather = [&](size_t k, int64_t lo, int64_t hi, std::vector<SpanList>* out) {
        EXPECT_EQ(lo, slices.Start(k));
        for (size_t l = 0; l < layers.size(); ++l) {
          for (const Span& s : layers[l]) {
            if (s.end_ns > lo && s.start_ns < hi) (*out)[l].push_back(s);
          }
        }
      };
      CriticalPath sliced = PaintCriticalPathBySlices(layer_count, slices, 999, gather);
      ASSERT_EQ(sliced.ToSpans(), whole) << "round " << round << ", " << slices.count() << " slices";
      EXPECT_EQ(sliced.start_ns(), window_start);
      EXPECT_EQ(sliced.end_ns(), window_end);
    }
  }
}

TEST(TimeSlicesTest, OfNamesTheSliceWhoseBoundsHoldTheInstant) {
  for (auto [start, end, count] : {std::tuple<int64_t, int64_t, size_t>{0, 100, 7},
                                   {-5, 3, 8},
                                   {10, 11, 1},
                                   {10, 10, 4},
                                   {1'700'000'000'000'000'000, 1'700'000'600'000'000'000, 4096}}) {
    TimeSlices slices = TimeSlices::About(start, end, count);
    EXPECT_LE(slices.count(), std::max<size_t>(count, 1));
    if (slices.shift > 0) {  // the narrowest such width: one step narrower is too many slices
      TimeSlices narrower = slices;
      --narrower.shift;
      EXPECT_GT(narrower.count(), count);
    }
    for (size_t k = 0; k < slices.count(); ++k) {
      int64_t lo = slices.Start(k), hi = slices.Start(k + 1);
      if (hi <= lo) continue;
      EXPECT_EQ(slices.Of(lo), k);
      EXPECT_EQ(slices.Of(hi - 1), k);
    }
    EXPECT_EQ(slices.Start(0), start);
    EXPECT_EQ(slices.Start(slices.count()), std::max(start, end));
    EXPECT_EQ(slices.Of(start - 1), 0u);
    EXPECT_EQ(slices.Of(end + 5), slices.count() - 1);
  }
}

// Pieces are 8 bytes: lengths past 32 bits (4.3 s) are kept exactly, and a piece that grows past
// them by merging too.
TEST(CriticalPathTest, LongPiecesAndMergesKeepExactBounds) {
  constexpr int64_t kBig = int64_t{1} << 33;
  SpanList spans = {{5, 10, 1}, {10, 10 + kBig, 2}, {10 + kBig, 20 + kBig, 3}, {20 + kBig, 30 + kBig, 3}};
  CriticalPath path = CriticalPath::FromSpans(spans);
  SpanList expected = {{5, 10, 1}, {10, 10 + kBig, 2}, {10 + kBig, 30 + kBig, 3}};
  EXPECT_EQ(path.ToSpans(), expected);
  EXPECT_EQ(path.size(), 3u);
  CriticalPath growing(0);
  growing.Append({0, 3'000'000'000, 4});
  growing.Append({3'000'000'000, 6'000'000'000, 4});  // merged past 2^32
  growing.Append({6'000'000'000, 6'000'000'001, 5});
  growing.Append({6'000'000'001, 6'000'000'001 + kBig, 5});
  SpanList grown = {{0, 6'000'000'000, 4}, {6'000'000'000, 6'000'000'001 + kBig, 5}};
  EXPECT_EQ(growing.ToSpans(), grown);
  growing.set_function(0, 7);
  EXPECT_EQ((*growing.begin()).function, 7u);
  EXPECT_TRUE(CriticalPath(3).empty());
  EXPECT_TRUE(CriticalPath(3).ToSpans().empty());
}

}  // namespace
}  // namespace eroica
