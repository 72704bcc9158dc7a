#include "trace/timestamp.h"

#include <gtest/gtest.h>

namespace eroica {
namespace {

TEST(ParseMicrosToNanosTest, Integers) {
  EXPECT_EQ(ParseMicrosToNanos("0"), 0);
  EXPECT_EQ(ParseMicrosToNanos("12"), 12000);
  EXPECT_EQ(ParseMicrosToNanos("1694128201436174"), 1694128201436174000);
  EXPECT_EQ(ParseMicrosToNanos("-3"), -3000);
}

TEST(ParseMicrosToNanosTest, EpochWithNanosecondDecimalsIsExact) {
  // A double reads this as ...695.75; the text says .783.
  EXPECT_EQ(ParseMicrosToNanos("1712195495519695.783"), 1712195495519695783);
  EXPECT_EQ(ParseMicrosToNanos("1712195495521131.125"), 1712195495521131125);
  EXPECT_EQ(ParseMicrosToNanos("4458676522690.655"), 4458676522690655);
}

TEST(ParseMicrosToNanosTest, ShortAndLongFractions) {
  EXPECT_EQ(ParseMicrosToNanos("3367344.0"), 3367344000);
  EXPECT_EQ(ParseMicrosToNanos("1.5"), 1500);
  EXPECT_EQ(ParseMicrosToNanos("1.0004"), 1000);
  EXPECT_EQ(ParseMicrosToNanos("1.0005"), 1001);
  EXPECT_EQ(ParseMicrosToNanos("12 \n"), 12000);
}

TEST(ParseMicrosToNanosTest, ExponentFallsBackToDouble) { EXPECT_EQ(ParseMicrosToNanos("1.5e3"), 1500000); }

TEST(ParseMicrosToNanosTest, RejectsNonNumbersAndOverflow) {
  EXPECT_FALSE(ParseMicrosToNanos(""));
  EXPECT_FALSE(ParseMicrosToNanos("\"12\""));
  EXPECT_FALSE(ParseMicrosToNanos("abc"));
  EXPECT_FALSE(ParseMicrosToNanos("1."));
  EXPECT_FALSE(ParseMicrosToNanos("99999999999999999999999"));
  EXPECT_FALSE(ParseMicrosToNanos("1e300"));
  EXPECT_FALSE(ParseMicrosToNanos("null"));
}

TEST(ParseIntegerTest, IntegersAndIntegralFloats) {
  EXPECT_EQ(ParseInteger("42"), 42);
  EXPECT_EQ(ParseInteger("42.0"), 42);
  EXPECT_FALSE(ParseInteger("42.5"));
  EXPECT_FALSE(ParseInteger("\"x\""));
}

}  // namespace
}  // namespace eroica
