#include "localize/finding_kind.h"

#include <gtest/gtest.h>

#include <set>

namespace eroica {
namespace {

TEST(FindingKindTest, EveryCategoryHasItsWordsAndItsNameReadsBack) {
  std::set<std::string_view> names;
  for (int c = 0; c < kFindingCategoryCount; ++c) {
    auto category = static_cast<FindingCategory>(c);
    const FindingCategoryInfo& info = InfoOf(category);
    EXPECT_FALSE(info.name.empty()) << c;
    EXPECT_FALSE(info.phrase.empty()) << info.name;
    EXPECT_TRUE(names.insert(info.name).second) << "two categories spelled " << info.name;
    EXPECT_EQ(FindingCategoryFromName(info.name), category);
    for (FindingScope scope : {FindingScope::kLocal, FindingScope::kGlobal}) {
      // fmt throws on a template that names an argument it is not given.
      std::string advice = AdviceFor(category, scope, 3);
      EXPECT_GT(advice.size(), 40u) << info.name << " " << Name(scope);
      EXPECT_EQ(advice.find('{'), std::string::npos) << advice;
      std::string request = RequestFor(category, scope, {3, "5 ms", "`x.py:1`", "f", "the collective"});
      EXPECT_GT(request.size(), 120u) << info.name << " " << Name(scope);
      EXPECT_EQ(request.find('{'), std::string::npos) << request;
    }
  }
  EXPECT_FALSE(FindingCategoryFromName("gpu"));
}

TEST(FindingKindTest, ResourceCategoriesMapBothWays) {
  for (int c = 0; c < kCategoryCount; ++c) {
    auto resource = static_cast<Category>(c);
    FindingCategory category = FindingCategoryOf(resource);
    EXPECT_EQ(InfoOf(category).resource, resource);
    EXPECT_EQ(Name(category), CategoryName(resource));
  }
  EXPECT_FALSE(InfoOf(FindingCategory::kImbalance).resource);
  EXPECT_FALSE(InfoOf(FindingCategory::kHang).resource);
}

TEST(FindingKindTest, ScopesReadBack) {
  EXPECT_EQ(FindingScopeFromName(Name(FindingScope::kLocal)), FindingScope::kLocal);
  EXPECT_EQ(FindingScopeFromName(Name(FindingScope::kGlobal)), FindingScope::kGlobal);
  EXPECT_FALSE(FindingScopeFromName("Local"));
}

TEST(FindingKindTest, LocalAdviceNamesTheRank) {
  EXPECT_NE(AdviceFor(FindingCategory::kDataloader, FindingScope::kLocal, 7).find("rank 7"), std::string::npos);
}

// The same ops many times slower on one CPU rank: on the testbed's 3-rank transformer with
// accumulated gradients, rank 0's aten::add_ took 3.7 ms against its peers' 32-75 us until
// torch.set_flush_denormal(True) (then 55 us): subnormal floats, named beside the hardware causes.
TEST(FindingKindTest, SlowerComputeAdviceNamesSubnormalFloats) {
  EXPECT_NE(AdviceFor(FindingCategory::kCompute, FindingScope::kLocal, 0).find("set_flush_denormal"),
            std::string::npos);
}

}  // namespace
}  // namespace eroica
