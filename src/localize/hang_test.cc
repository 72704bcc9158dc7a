#include "localize/hang.h"

#include <gtest/gtest.h>

#include "base/temp_dir.h"
#include "localize/localizer.h"

namespace eroica {
namespace {

std::string Dump(int rank, const std::string& file, int line, const std::string& waiting) {
  return fmt::format(R"json({{"rank": {}, "world_size": 4, "iteration": 30, "waiting_in": {},
    "threads": [{{"thread_id": 2, "name": "watchdog", "is_main": false, "frames": []}},
                {{"thread_id": 1, "name": "MainThread", "is_main": true, "frames": [
      {{"file": "/app/train.py", "line": 200, "function": "main", "code": "train()"}},
      {{"file": "{}", "line": {}, "function": "step", "code": "lock.acquire()"}},
      {{"file": "/usr/lib/python3/dist-packages/torch/distributed/distributed_c10d.py", "line": 1500, "function": "all_reduce", "code": ""}}
    ]}}]}})json",
                     rank, waiting.empty() ? "null" : "\"" + waiting + "\"", file, line);
}

TEST(HangTest, TheMinorityStackIsTheSuspect) {
  TempDir dir;
  std::vector<StackDump> dumps;
  for (int r = 0; r < 4; ++r) {
    std::string text = r == 2 ? Dump(r, "/app/model.py", 88, "") : Dump(r, "/app/train.py", 120, "all_reduce");
    StatusOr<StackDump> d = ReadStackDump(dir.Write(fmt::format("stacks-rank-{}.json", r), text));
    ASSERT_TRUE(d.ok()) << d.status().message();
    dumps.push_back(*d);
  }
  EXPECT_EQ(InnermostUserFrame(dumps[0])->file, "/app/train.py");
  std::vector<Finding> findings = FindHang(dumps, 4);
  ASSERT_EQ(findings.size(), 1u);
  EXPECT_EQ(findings[0].category, FindingCategory::kHang);
  EXPECT_EQ(findings[0].workers, std::vector<int>{2});
  EXPECT_EQ(findings[0].location, "/app/model.py:88");
  EXPECT_NE(findings[0].evidence.find("lock.acquire()"), std::string::npos);
}

TEST(HangTest, WhenAllAgreeTheMissingRanksAreSuspects) {
  TempDir dir;
  std::vector<StackDump> dumps;
  for (int r : {0, 1, 3}) {
    dumps.push_back(*ReadStackDump(dir.Write(fmt::format("s{}.json", r), Dump(r, "/app/train.py", 120, "all_reduce"))));
  }
  std::vector<Finding> findings = FindHang(dumps, 4);
  ASSERT_EQ(findings.size(), 1u);
  EXPECT_EQ(findings[0].workers, std::vector<int>{2});
}

TEST(HangTest, BadDumpIsAnError) {
  TempDir dir;
  EXPECT_FALSE(ReadStackDump(dir.Write("x.json", "[1, 2")).ok());
  EXPECT_FALSE(ReadStackDump(dir.Write("y.json", R"({"rank": 1})")).ok());
}

// Wrong-typed fields used to abort the process (an uncaught nlohmann type_error, exit 134).
TEST(HangTest, WrongTypedFieldsAreSkippedNotAnAbort) {
  TempDir dir;
  StatusOr<StackDump> d =
      ReadStackDump(dir.Write("stacks-rank-1.json",
                              R"({"rank": 3.0, "world_size": 1e300, "iteration": [1], "waiting_in": 5,
          "threads": [{"is_main": "yes", "frames": [{"file": 1, "line": "x", "function": null}, 3]},
                      7]})"));
  ASSERT_TRUE(d.ok()) << d.status().message();
  EXPECT_EQ(d->rank, 3);
  EXPECT_EQ(d->world_size, 0);
  ASSERT_EQ(d->main_frames.size(), 1u);
  EXPECT_EQ(d->main_frames[0].file, "");
  EXPECT_EQ(d->main_frames[0].line, 0);
  StatusOr<StackDump> no_rank = ReadStackDump(dir.Write("stacks-rank-2.json", R"({"rank": "zero", "threads": []})"));
  ASSERT_FALSE(no_rank.ok());
  EXPECT_NE(no_rank.status().message().find("no rank"), std::string::npos);
}

TEST(HangTest, AHugeWorldSizeIsCutNotFilled) {
  TempDir dir;
  std::vector<StackDump> dumps;
  for (int r : {0, 1}) {
    dumps.push_back(*ReadStackDump(dir.Write(fmt::format("s{}.json", r), Dump(r, "/app/train.py", 120, "all_reduce"))));
  }
  std::vector<Finding> findings = FindHang(dumps, 2147483647);
  ASSERT_EQ(findings.size(), 1u);
  EXPECT_LE(findings[0].workers.size(), static_cast<size_t>(kMaxWorldSize));
  EXPECT_LT(findings[0].evidence.size(), 1000u);
}
}  // namespace
}  // namespace eroica
