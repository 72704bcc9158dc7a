#include "summary/loader_work.h"

#include <gtest/gtest.h>

namespace eroica {
namespace {

// A worker sampled at 100 Hz: torch's worker loop either waits in its index queue or fetches.
StackSamples Worker(const std::vector<std::pair<int64_t, bool>>& samples_ms_making) {
  StackSamples w;
  w.hz = 100;
  w.frames = {{"/usr/lib/python3.11/multiprocessing/queues.py", 113, "get"},
              {"/usr/lib/python3/dist-packages/torch/utils/data/_utils/worker.py", 302, "_worker_loop"},
              {"/job/data.py", 21, "__getitem__"},
              {"/usr/lib/python3/dist-packages/torch/utils/data/_utils/fetch.py", 58, "fetch"},
              {"/usr/lib/python3.11/multiprocessing/connection.py", 930, "wait"}};
  w.stacks = {{4, 0, 1}, {2, 3, 1}};  // innermost first: waiting for indices; making a batch
  for (const auto& [ms, making] : samples_ms_making) w.samples.push_back({ms * 1'000'000, making ? 1u : 0u});
  return w;
}

TEST(LoaderWorkTest, EachSampleStandsForTheTimeToTheNext) {
  // Making a batch 0-20 ms, waiting 20-40 ms (the last sample only closes the span).
  EXPECT_DOUBLE_EQ(*BatchMakingShare(Worker({{0, true}, {10, true}, {20, false}, {30, false}, {40, true}})), 0.5);
  // A worker descheduled for 200 ms is not guessed at: the gap counts four periods.
  EXPECT_DOUBLE_EQ(*BatchMakingShare(Worker({{0, false}, {10, true}, {210, false}})), 0.8);
}

TEST(LoaderWorkTest, AQueueGetOutsideTheWorkerLoopIsTheDatasetsOwnWork) {
  StackSamples w = Worker({{0, true}, {10, true}, {20, true}});
  w.stacks[1] = {0, 2, 3, 1};  // the dataset reads a queue of its own
  EXPECT_DOUBLE_EQ(*BatchMakingShare(w), 1.0);
}

TEST(LoaderWorkTest, TooFewSamplesOrNoRateSayNothing) {
  EXPECT_FALSE(BatchMakingShare(Worker({{0, true}})).has_value());
  StackSamples no_rate = Worker({{0, true}, {10, true}});
  no_rate.hz = 0;
  EXPECT_FALSE(BatchMakingShare(no_rate).has_value());
}

}  // namespace
}  // namespace eroica
