#include "base/one_line.h"

#include <gtest/gtest.h>

namespace eroica {
namespace {

TEST(OneLineTest, ControlCharactersBecomeSpacesAndLengthIsBounded) {
  EXPECT_EQ(OneLine("node-7", 255), "node-7");
  EXPECT_EQ(OneLine("a\nb\x1b[2Jc\x7f", 255), "a b [2Jc ");
  EXPECT_EQ(OneLine("abcdef", 3), "abc...");
  EXPECT_EQ(OneLine("β μ", 255), "β μ");  // UTF-8 bytes are not control characters
}

}  // namespace
}  // namespace eroica
