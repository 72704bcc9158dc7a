#include "base/json_access.h"

#include <gtest/gtest.h>

namespace eroica {
namespace {

TEST(JsonAccessTest, WrongTypesGiveTheFallbackNeverAnAbort) {
  std::optional<Json> j = ParseJson(R"({"rank":"zero","world":1e300,"n":3.0,"big":18446744073709551615,
                                        "s":5,"a":[1,"x",2.5,null],"o":{"k":true}})");
  ASSERT_TRUE(j.has_value());
  EXPECT_EQ(JsonIntOr(*j, {"rank"}, -1), -1);
  EXPECT_EQ(JsonSmallIntOr(*j, {"world"}, 0), 0);  // a float far beyond int: no UB, fallback
  EXPECT_EQ(JsonIntOr(*j, {"n"}, 0), 3);
  EXPECT_EQ(JsonIntOr(*j, {"big"}, 7), 7);
  EXPECT_EQ(JsonSmallIntOr(*j, {"missing", "n"}, 0), 3);  // aliases, first present wins
  EXPECT_EQ(JsonStringOr(*j, {"s"}, "none"), "none");
  EXPECT_EQ(JsonTextOr(*j, {"s"}), "5");
  EXPECT_EQ(JsonInts(JsonField(*j, {"a"})), (std::vector<int64_t>{1}));
  EXPECT_EQ(JsonNumbers(JsonField(*j, {"a"})).size(), 2u);
  EXPECT_EQ(JsonStrings(JsonField(*j, {"a"})), (std::vector<std::string>{"x"}));
  EXPECT_EQ(JsonArrayField(*j, {"o"}), nullptr);
  ASSERT_NE(JsonObjectField(*j, {"o"}), nullptr);
  EXPECT_TRUE(JsonBoolOr(*JsonObjectField(*j, {"o"}), {"k"}, false));
  EXPECT_EQ(JsonIntOr(Json::array(), {"rank"}, -2), -2);  // not an object
  EXPECT_EQ(JsonIntOr(*j, {"n"}, 0, 0, 2), 0);            // outside the asked range
}

TEST(JsonAccessTest, ParseNeverThrows) {
  EXPECT_FALSE(ParseJson("{").has_value());
  EXPECT_FALSE(ParseJson("").has_value());
  EXPECT_FALSE(ParseJson("{} // c").has_value());
  EXPECT_TRUE(ParseJson("{} // c", /*allow_comments=*/true).has_value());
}

}  // namespace
}  // namespace eroica
