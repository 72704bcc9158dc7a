#include "agent/series_buffer.h"

#include <gtest/gtest.h>

#include "agent/sample_store.h"

namespace eroica::agent {
namespace {

constexpr int64_t kSecond = 1'000'000'000;
constexpr int64_t kBase = 1'718'000'000'000'000'000;  // 2024, unix ns

TEST(SeriesBufferTest, RoundTripsExactValues) {
  SeriesBuffer buffer(100 * kSecond, 100000);
  std::vector<Sample> written;
  int64_t values[] = {0, 5, -7, INT64_MAX, INT64_MIN, 42, 42, 42, 1'000'000'007};
  for (int64_t i = 0; i < 2000; ++i) {
    int64_t ts = kBase + i * 10'000'000 + (i % 7) * 13'000;  // jittered, whole µs
    int64_t value = values[i % 9] + (i % 9 == 0 ? i * 1'000'000 : 0);
    ASSERT_TRUE(buffer.Append(ts, value));
    written.push_back({ts, value});
  }
  std::vector<Sample> read;
  buffer.CopyRange(INT64_MIN, INT64_MAX, &read);
  ASSERT_EQ(read.size(), written.size());
  for (size_t i = 0; i < read.size(); ++i) {
    EXPECT_EQ(read[i].ts_ns, written[i].ts_ns) << i;
    EXPECT_EQ(read[i].value, written[i].value) << i;
  }
  EXPECT_LT(buffer.memory_bytes(), written.size() * sizeof(Sample));
}

TEST(SeriesBufferTest, CopiesOnlyTheRangeAndFloorsToMicroseconds) {
  SeriesBuffer buffer(100 * kSecond, 100000);
  for (int i = 0; i < 1000; ++i) ASSERT_TRUE(buffer.Append(kBase + i * kSecond / 100 + 999, i));
  std::vector<Sample> read;
  buffer.CopyRange(kBase + kSecond, kBase + 2 * kSecond, &read);
  ASSERT_EQ(read.size(), 101u);
  EXPECT_EQ(read.front().ts_ns, kBase + kSecond);
  EXPECT_EQ(read.front().value, 100);
  EXPECT_EQ(read.back().value, 200);
}

TEST(SeriesBufferTest, KeepsTheWindowAndNoMore) {
  SeriesBuffer buffer(1 * kSecond, 1'000'000);
  for (int64_t i = 0; i < 20000; ++i) ASSERT_TRUE(buffer.Append(kBase + i * 10'000'000, i));
  int64_t newest = kBase + 19999LL * 10'000'000;
  EXPECT_EQ(buffer.last_ts_ns(), newest);
  EXPECT_LE(buffer.first_ts_ns(), newest - kSecond);  // covers at least the window
  EXPECT_LE(buffer.sample_count(), 100u + 2 * SeriesBuffer::kSamplesPerChunk);
  EXPECT_LT(buffer.memory_bytes(), 8192u);
}

TEST(SeriesBufferTest, CapsTheSampleCount) {
  SeriesBuffer buffer(1000 * kSecond, 1000);
  for (int64_t i = 0; i < 100000; ++i) ASSERT_TRUE(buffer.Append(kBase + i * 1000, i));
  EXPECT_LT(buffer.sample_count(), 1000u + SeriesBuffer::kSamplesPerChunk);
  EXPECT_GE(buffer.sample_count(), 1000u);
}

TEST(SeriesBufferTest, RefusesTimeGoingBackwards) {
  SeriesBuffer buffer(kSecond, 100);
  EXPECT_TRUE(buffer.Append(kBase + 5000, 1));
  EXPECT_FALSE(buffer.Append(kBase + 1000, 2));
  EXPECT_TRUE(buffer.Append(kBase + 5000, 3));  // equal is fine
  EXPECT_EQ(buffer.sample_count(), 2u);
}

TEST(SampleStoreTest, RegistersOnceReleasesAndCollects) {
  StoreOptions options;
  options.window_ns = kSecond;
  options.max_series = 2;
  SampleStore store(options);
  SeriesId a, b;
  {
    SampleStore::Writer writer(&store);
    a = writer.Register({"x", SeriesKind::kGauge, "pct", 1, -1, "", "old", 0});
    EXPECT_EQ(writer.Register({"x", SeriesKind::kGauge, "pct", 1, -1, "", "new", 7}), a);
    b = writer.Register({"y", SeriesKind::kGauge, "pct"});
    EXPECT_EQ(writer.Register({"z", SeriesKind::kGauge, "pct"}), kNoSeries);  // full
    writer.Record(a, kBase, 10);
    writer.Record(b, kBase, 20);
    writer.Record(kNoSeries, kBase, 30);
    writer.Release(b);
    writer.Record(b, kBase + 1000, 21);  // released: dropped
  }
  StoreStats stats = store.Stats();
  EXPECT_EQ(stats.samples_recorded, 2u);
  EXPECT_EQ(stats.samples_dropped, 2u);
  std::vector<MetricsSeries> snapshot = store.Snapshot(kBase, kBase);
  ASSERT_EQ(snapshot.size(), 2u);
  EXPECT_EQ(snapshot[0].info.label, "new");
  EXPECT_EQ(snapshot[0].info.capacity, 7);
  store.CollectGarbage(kBase + kSecond / 2);  // b still inside the window
  EXPECT_EQ(store.Stats().series, 2u);
  store.CollectGarbage(kBase + 2 * kSecond);
  EXPECT_EQ(store.Stats().series, 1u);
  SampleStore::Writer writer(&store);
  EXPECT_NE(writer.Register({"z", SeriesKind::kGauge, "pct"}), kNoSeries);  // slot reused
}

}  // namespace
}  // namespace eroica::agent
