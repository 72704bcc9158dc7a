#include "summary/correlation_set.h"

#include <gtest/gtest.h>

#include <random>
#include <set>

namespace eroica {
namespace {

// Dense ids take the bitmap, sparse ones the sorted list; both answer as a std::set would,
// for ids inside, between, below and above the ones added.
TEST(CorrelationSetTest, AnswersAsASetWouldForDenseAndSparseIds) {
  std::mt19937_64 rng(3);
  for (int64_t spread : {int64_t{2}, int64_t{1} << 40}) {
    CorrelationSet set;
    std::set<int64_t> want;
    for (int i = 0; i < 5000; ++i) {
      int64_t id = 1000 + static_cast<int64_t>(rng() % static_cast<uint64_t>(5000 * spread));
      set.Add(id);
      want.insert(id);
    }
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
}

}  // namespace
}  // namespace eroica
