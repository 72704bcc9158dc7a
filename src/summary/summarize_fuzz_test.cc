// Randomized-mutation fuzzing of the reader and summarizer, run briefly in every test run (and
// under ASan/UBSan in the sanitizer build): damaged traces must give an error or a pattern,
// never a crash.
#include <gtest/gtest.h>

#include <chrono>
#include <random>

#include "base/temp_dir.h"
#include "summary/fuzz_input.h"

namespace eroica {
namespace {

constexpr std::string_view kSeeds[] = {
    R"json({"traceEvents": [
 {"ph":"X","cat":"user_annotation","name":"ProfilerStep#5","pid":10,"tid":1,"ts":0,"dur":900},
 {"ph":"X","cat":"cuda_runtime","name":"cudaLaunchKernel","pid":10,"tid":1,"ts":10,"dur":5,"args":{"correlation":1}},
 {"ph":"X","cat":"kernel","name":"void gemm<1>(int)","pid":0,"tid":7,"ts":100,"dur":200,"args":{"correlation":1}},
 {"ph":"X","cat":"kernel","name":"ncclDevKernel_AllReduce_Sum_f32_RING_LL(x)","pid":0,"tid":20,"ts":350,"dur":250,"args":{"correlation":3,"In msg nelems":10,"dtype":"Float"}},
 {"ph":"X","cat":"user_annotation","name":"enumerate(DataLoader)#_SingleProcessDataLoaderIter.__next__","pid":10,"tid":1,"ts":600,"dur":200},
 {"ph":"X","cat":"python_function","name":"train.py(12): step","pid":10,"tid":1,"ts":1.5,"dur":800.25},
 {"ph":"s","id":1,"pid":10,"tid":1,"ts":10,"cat":"ac2g","name":"ac2g"},
 {"ph":"i","s":"g","name":"Record Window End","pid":"","tid":"","ts":1600}
], "distributedInfo": {"rank": 2, "world_size": 4, "pg_config": [{"pg_name": "0", "ranks": [0,1,2,3]}]},
 "baseTimeNanoseconds": 1711964646000000000})json",
    R"json([{"name":"ProfilerStep#1","ph":"X","ts":0,"dur":1000,"tid":1,"pid":"CPU functions","args":{}},
 {"name":"aten::addmm","ph":"X","ts":300,"dur":300,"tid":1,"pid":"CPU functions"},
 {"name":"gloo:all_reduce","ph":"X","ts":500,"dur":400,"tid":3,"pid":"CPU functions"}])json",
};

constexpr std::string_view kTokens[] = {"{",  "}",     "[",    "]",     ",",      ":",       "\"",     "\\",
                                        "-1", "1e999", "null", "\"X\"", "\"ts\"", "\"dur\"", "0.0001", "\"ph\":\"X\""};

std::string Mutate(std::string input, std::mt19937& rng) {
  int edits = 1 + static_cast<int>(rng() % 4);
  for (int i = 0; i < edits && !input.empty(); ++i) {
    size_t at = rng() % input.size();
    switch (rng() % 5) {
      case 0:
        input[at] = static_cast<char>(rng());
        break;
      case 1:
        input.erase(at, 1 + rng() % 16);
        break;
      case 2:
        input.insert(at, kTokens[rng() % std::size(kTokens)]);
        break;
      case 3:
        input.resize(at);
        break;
      default:
        input.insert(at, input.substr(rng() % input.size(), 1 + rng() % 64));
        break;
    }
  }
  return input;
}

TEST(SummarizeFuzzTest, MutatedTracesNeverCrash) {
  TempDir dir;
  std::string scratch = dir.path() + "/fuzz.json";
  std::mt19937 rng(20261129);
  int patterns = 0, runs = 0;
  auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(4);
  while (std::chrono::steady_clock::now() < deadline && runs < 3000) {
    std::string input(kSeeds[runs % std::size(kSeeds)]);
    for (int generation = 0; generation < 1 + runs % 3; ++generation) input = Mutate(input, rng);
    patterns += SummarizeFuzzInput(input, scratch) ? 1 : 0;
    ++runs;
  }
  EXPECT_GT(runs, 100);
  EXPECT_GT(patterns, 0);  // some mutants are still traces: the salvage path is exercised
  for (std::string_view seed : kSeeds) EXPECT_TRUE(SummarizeFuzzInput(seed, scratch));
}

}  // namespace
}  // namespace eroica
