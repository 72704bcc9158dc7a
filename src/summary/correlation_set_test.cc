#include "summary/correlation_set.h"

#include <gtest/gtest.h>

#include <random>
#include <set>
#include <vector>

namespace eroica {
namespace {

// Dense ids take the bitmap, sparse ones the sorted list; both answer as a std::set would,
// for ids inside, between, below and above the ones added.
TEST(CorrelationSetTest, AnswersAsASetWouldForDenseAndSparseIds) {
  std::mt19937_64 rng(3);
  for (int64_t spread : {int64_t{2}, int64_t{1} << 40}) {
    std::vector<int64_t> ids;
    std::set<int64_t> want;
    for (int i = 0; i < 5000; ++i) {
      ids.push_back(1000 + static_cast<int64_t>(rng() % static_cast<uint64_t>(5000 * spread)));
      want.insert(ids.back());
    }
    CorrelationSet set;
    set.Plan(*want.begin(), *want.rbegin(), ids.size());
    for (int64_t id : ids) set.Add(id);
    set.Seal();
    for (int i = 0; i < 20000; ++i) {
      int64_t probe = static_cast<int64_t>(rng() % static_cast<uint64_t>(5000 * spread + 3000));
      ASSERT_EQ(set.Contains(probe), want.count(probe) == 1) << probe << " spread " << spread;
    }
    for (int64_t id : want) ASSERT_TRUE(set.Contains(id));
    EXPECT_FALSE(set.Contains(0));
    EXPECT_FALSE(set.Contains(*want.rbegin() + 1));
  }
  CorrelationSet empty;
  empty.Seal();
  EXPECT_FALSE(empty.Contains(0));
  CorrelationSet unplanned;  // listed, then sorted
  for (int64_t id : {9, 3, 7}) unplanned.Add(id);
  unplanned.Seal();
  EXPECT_TRUE(unplanned.Contains(3) && unplanned.Contains(7) && unplanned.Contains(9));
  EXPECT_FALSE(unplanned.Contains(5));
}

}  // namespace
}  // namespace eroica
