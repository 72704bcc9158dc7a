#include "agent/process_registry.h"

#include <gtest/gtest.h>
#include <sys/stat.h>
#include <unistd.h>

#include "agent/test_util.h"
#include "base/temp_dir.h"

namespace eroica::agent {
namespace {

using testing::StatLine;
using testing::WriteInPlace;

TEST(RegistrationTest, ParsesRegistrations) {
  Registration registration;
  ASSERT_TRUE(ParseRegistration(
      R"({"pid": 12, "rank": 3, "session_dir": null, "host": "n1", "last_iteration_s": 0.25,
          "gpu": 2, "future_field": [1, 2]})",
      -1, &registration));
  EXPECT_EQ(registration.pid, 12);
  EXPECT_EQ(registration.rank, 3);
  EXPECT_EQ(registration.session_dir, "");
  EXPECT_EQ(registration.host, "n1");
  EXPECT_EQ(registration.last_iteration_s, 0.25);
  EXPECT_EQ(registration.gpu, 2);
  ASSERT_TRUE(ParseRegistration(R"({"rank": 1, "session_dir": "/s/1"})", 77, &registration));
  EXPECT_EQ(registration.pid, 77);
  EXPECT_EQ(registration.session_dir, "/s/1");
  EXPECT_FALSE(ParseRegistration(R"({"pid": 1)", 5, &registration));
  EXPECT_FALSE(ParseRegistration(R"([1, 2])", 5, &registration));
  EXPECT_FALSE(ParseRegistration(R"({"rank": 1})", -1, &registration));
}

class ProcessRegistryTest : public ::testing::Test {
 protected:
  void SetUp() override {
    // Booted at unix 1000 s; with 100 ticks/s a start time of 500 ticks is unix 1005 s.
    WriteInPlace(root_.path() + "/proc/stat", "cpu 1 1 1 1\nbtime 1000\n");
    options_.procs_dir = dir_.path() + "/procs";
    options_.root = root_.path();
    options_.clock_ticks_per_s = 100;
    options_.forget_after_ns = 10'000'000'000;
  }
  void StartProcess(int64_t pid, int64_t start_ticks) {
    WriteInPlace(root_.path() + "/proc/" + std::to_string(pid) + "/stat", StatLine(pid, "python", 1, 1, start_ticks));
  }

  TempDir root_;
  TempDir dir_;
  RegistryOptions options_;
  ErrorLog log_{true};
};

TEST_F(ProcessRegistryTest, FollowsLiveProcessesAndRemembersDeparted) {
  StartProcess(11, 500);
  StartProcess(12, 500);
  WriteInPlace(options_.procs_dir + "/11.json", R"({"pid": 11, "rank": 0, "host": "h"})");
  WriteInPlace(options_.procs_dir + "/12.json", R"({"pid": 12, "rank": 1, "last_iteration_s": 2})");
  WriteInPlace(options_.procs_dir + "/13.json", R"({"pid": 13, "rank": 2})");  // no such process
  WriteInPlace(options_.procs_dir + "/notes.txt", "ignored");
  ProcessRegistry registry(options_, &log_);
  int64_t now_ns = 5'000'000'000'000'000'000;
  registry.Scan(now_ns);
  std::vector<Registration> live = registry.Live();
  ASSERT_EQ(live.size(), 2u);
  EXPECT_EQ(live[0].pid, 11);
  EXPECT_EQ(live[1].last_iteration_s, 2.0);

  std::filesystem::remove_all(root_.path() + "/proc/12");  // exits
  registry.Scan(now_ns + 1'000'000'000);
  EXPECT_EQ(registry.Live().size(), 1u);
  EXPECT_EQ(registry.SeenSince(now_ns).size(), 2u);  // 12 is remembered for the file
  registry.Scan(now_ns + 20'000'000'000);
  EXPECT_EQ(registry.SeenSince(now_ns).size(), 1u);  // and forgotten later
}

TEST_F(ProcessRegistryTest, IgnoresAReusedPid) {
  // The file was written long before the process now holding pid 11 started.
  WriteInPlace(options_.procs_dir + "/11.json", R"({"pid": 11})");
  std::filesystem::last_write_time(options_.procs_dir + "/11.json",
                                   std::filesystem::file_time_type::clock::now() - std::chrono::hours(1));
  auto mtime = std::filesystem::last_write_time(options_.procs_dir + "/11.json");
  auto mtime_s =
      std::chrono::duration_cast<std::chrono::seconds>(std::chrono::file_clock::to_sys(mtime).time_since_epoch())
          .count();
  StartProcess(11, (mtime_s - 1000 + 60) * 100);  // started a minute after the file
  ProcessRegistry registry(options_, &log_);
  registry.Scan(0);
  EXPECT_TRUE(registry.Live().empty());
  StartProcess(11, (mtime_s - 1000 - 60) * 100);  // started before it: fine
  registry.Scan(0);
  EXPECT_EQ(registry.Live().size(), 1u);
}

TEST_F(ProcessRegistryTest, BrokenFilesAreSkipped) {
  StartProcess(11, 500);
  WriteInPlace(options_.procs_dir + "/11.json", R"({"pid": 11, "rank": )");
  ProcessRegistry registry(options_, &log_);
  registry.Scan(INT64_MAX / 2);  // the file is old: logged once
  registry.Scan(INT64_MAX / 2);
  EXPECT_TRUE(registry.Live().empty());
  EXPECT_EQ(log_.count("registration-11.json"), 1u);
  WriteInPlace(options_.procs_dir + "/11.json", R"({"pid": 11, "rank": 4})");
  std::filesystem::last_write_time(options_.procs_dir + "/11.json",
                                   std::filesystem::file_time_type::clock::now() + std::chrono::seconds(5));
  registry.Scan(INT64_MAX / 2);
  ASSERT_EQ(registry.Live().size(), 1u);
  EXPECT_EQ(registry.Live()[0].rank, 4);
}

TEST_F(ProcessRegistryTest, AFifoOrSymlinkInProcsDoesNotBlockTheScan) {
  StartProcess(11, 500);
  WriteInPlace(options_.procs_dir + "/11.json", R"({"pid": 11, "rank": 0})");
  ASSERT_EQ(::mkfifo((options_.procs_dir + "/999.json").c_str(), 0600), 0);
  ASSERT_EQ(::symlink("/dev/zero", (options_.procs_dir + "/998.json").c_str()), 0);
  ProcessRegistry registry(options_, &log_);
  registry.Scan(INT64_MAX / 2);  // the old reader blocked on the FIFO for good
  ASSERT_EQ(registry.Live().size(), 1u);
  EXPECT_EQ(registry.Live()[0].pid, 11);
  EXPECT_EQ(log_.count("registration-999.json"), 1u);
}

}  // namespace
}  // namespace eroica::agent
