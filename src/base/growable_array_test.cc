#include "base/growable_array.h"

#include <gtest/gtest.h>

#include <cstdint>
#include <utility>

namespace eroica {
namespace {

struct Pair {
  int64_t a;
  int32_t b;
};

TEST(GrowableArrayTest, GrowsPastManyRemapsKeepingEveryValue) {
  GrowableArray<Pair> values;
  constexpr int64_t kCount = 3'000'000;  // 48 MB: several remaps past the first 2 MB
  for (int64_t i = 0; i < kCount; ++i) values.push_back({i, static_cast<int32_t>(i * 7)});
  ASSERT_EQ(values.size(), static_cast<size_t>(kCount));
  for (int64_t i = 0; i < kCount; i += 9973) {
    EXPECT_EQ(values[static_cast<size_t>(i)].a, i);
    EXPECT_EQ(values[static_cast<size_t>(i)].b, static_cast<int32_t>(i * 7));
  }
  EXPECT_EQ(values.back().a, kCount - 1);
}

TEST(GrowableArrayTest, ShrinkMoveAndEmpty) {
  GrowableArray<int64_t> values;
  EXPECT_TRUE(values.empty());
  EXPECT_EQ(values.begin(), values.end());
  values.shrink_to_fit();  // nothing mapped: nothing to do
  values.reserve(10'000'000);
  EXPECT_GE(values.capacity(), 10'000'000u);
  for (int64_t i = 0; i < 1000; ++i) values.push_back(i);
  values.shrink_to_fit();
  EXPECT_LT(values.capacity(), 10'000'000u);
  EXPECT_GE(values.capacity(), 1000u);
  values.push_back(1000);  // grows again after the shrink
  GrowableArray<int64_t> moved = std::move(values);
  EXPECT_TRUE(values.empty());  // NOLINT(bugprone-use-after-move): the moved-from state is defined
  ASSERT_EQ(moved.size(), 1001u);
  int64_t sum = 0;
  for (int64_t v : moved) sum += v;
  EXPECT_EQ(sum, 1000 * 1001 / 2);
  moved.pop_back();
  EXPECT_EQ(moved.back(), 999);
  moved.clear();
  moved.shrink_to_fit();
  EXPECT_EQ(moved.capacity(), 0u);
}

TEST(GrowableArrayTest, ResizeZeroesAndReleasedFrontReadsAsZero) {
  GrowableArray<uint32_t> values;
  values.resize(3'000'000);
  EXPECT_EQ(values.size(), 3'000'000u);
  EXPECT_EQ(values[2'999'999], 0u);
  for (size_t i = 0; i < values.size(); ++i) values[i] = static_cast<uint32_t>(i + 1);
  values.ReleaseFront(2'000'000);
  EXPECT_EQ(values[0], 0u);  // a released page
  for (size_t i = 2'000'000; i < values.size(); i += 997) {
    ASSERT_EQ(values[i], static_cast<uint32_t>(i + 1)) << i;  // from value 2,000,000 on all is kept
  }
  EXPECT_EQ(values.back(), 3'000'000u);
  values.resize(10);
  values.resize(20);  // grown again: the new values are zero, not what was there before
  EXPECT_EQ(values[15], 0u);
  GrowableArray<uint32_t> empty;
  empty.ReleaseFront(5);  // nothing mapped: nothing to do
  EXPECT_TRUE(empty.empty());
}

}  // namespace
}  // namespace eroica
