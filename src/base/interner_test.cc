#include "base/interner.h"

#include <gtest/gtest.h>

namespace eroica {
namespace {

TEST(InternerTest, SameTextSameId) {
  Interner interner;
  StringId a = interner.Intern("aten::mm");
  StringId b = interner.Intern("aten::add");
  EXPECT_NE(a, b);
  EXPECT_EQ(a, interner.Intern(std::string("aten::mm")));
  EXPECT_EQ(interner.Get(b), "aten::add");
  EXPECT_EQ(interner.Intern(""), Interner::kEmpty);
}

TEST(InternerTest, ViewsStayValidAfterGrowth) {
  Interner interner;
  StringId first = interner.Intern("first");
  for (int i = 0; i < 10000; ++i) interner.Intern("s" + std::to_string(i));
  EXPECT_EQ(interner.Get(first), "first");
  EXPECT_EQ(interner.Intern("s42"), interner.Intern("s42"));
}

}  // namespace
}  // namespace eroica
