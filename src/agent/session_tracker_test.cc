#include "agent/session_tracker.h"

#include <gtest/gtest.h>
#include <sys/stat.h>
#include <unistd.h>

#include <filesystem>

#include "agent/test_util.h"
#include "base/temp_dir.h"

namespace eroica::agent {
namespace {

using testing::WriteInPlace;

constexpr int64_t kSecond = 1'000'000'000;
constexpr int64_t kT0 = 1'718'000'000'000'000'000;

TEST(SessionTrackerTest, ParsesCaptureStart) {
  CaptureSession session;
  ASSERT_TRUE(ParseCaptureStart(R"({"start_unix_ns": 1718000000000000000, "duration_s": 2.5})", 0, &session));
  EXPECT_EQ(session.start_unix_ns, kT0);
  EXPECT_EQ(session.end_unix_ns, kT0 + 2'500'000'000);
  EXPECT_EQ(session.window_start_ns(), kT0 - kSecond);
  ASSERT_TRUE(ParseCaptureStart("{}", kT0, &session));  // defaults: mtime, 20 s
  EXPECT_EQ(session.end_unix_ns, kT0 + 20 * kSecond);
  EXPECT_FALSE(ParseCaptureStart("{\"start_unix_ns\": ", kT0, &session));
}

TEST(SessionTrackerTest, FindsSessionsAndWritesThemWhenDue) {
  TempDir dir;
  WriteInPlace(dir.path() + "/s1/capture.start", R"({"start_unix_ns": 1718000000000000000, "duration_s": 10})");
  WriteInPlace(dir.path() + "/s2/capture.start", R"({"start_unix_ns": 1718000000000000000, "duration_s": 10})");
  WriteInPlace(dir.path() + "/s2/metrics-h.eroica-metrics", "already written");
  WriteInPlace(dir.path() + "/s3/trace.json", "{}");  // not a session (yet)
  WriteInPlace(dir.path() + "/elsewhere/capture.start", R"({"start_unix_ns": 1718000000000000000})");
  ErrorLog log(true);
  SessionTracker tracker(dir.path(), "metrics-h.eroica-metrics", &log);
  tracker.Poll(kT0 + kSecond, {dir.path() + "/elsewhere", ""});
  EXPECT_EQ(tracker.active(), 2u);                           // s1 and elsewhere
  EXPECT_TRUE(tracker.TakeDue(kT0 + 10 * kSecond).empty());  // needs end + 1 s
  std::vector<CaptureSession> due = tracker.TakeDue(kT0 + 11 * kSecond);
  ASSERT_EQ(due.size(), 1u);
  EXPECT_EQ(due[0].dir, dir.path() + "/s1");
  tracker.Poll(kT0 + 12 * kSecond, {});
  EXPECT_EQ(tracker.active(), 1u);  // s1 is not picked up again
}

TEST(SessionTrackerTest, CaptureStopEndsEarlyAndShutdownCutsAll) {
  TempDir dir;
  WriteInPlace(dir.path() + "/s1/capture.start", R"({"start_unix_ns": 1718000000000000000, "duration_s": 60})");
  WriteInPlace(dir.path() + "/s2/capture.start", R"({"start_unix_ns": 1718000000000000000, "duration_s": 60})");
  ErrorLog log(true);
  SessionTracker tracker(dir.path(), "metrics-h.eroica-metrics", &log);
  tracker.Poll(kT0, {});
  WriteInPlace(dir.path() + "/s1/capture.stop", R"({"stop_unix_ns": 1718000003000000000})");
  tracker.Poll(kT0 + 5 * kSecond, {});
  std::vector<CaptureSession> due = tracker.TakeDue(kT0 + 5 * kSecond);
  ASSERT_EQ(due.size(), 1u);
  EXPECT_EQ(due[0].end_unix_ns, kT0 + 3 * kSecond);
  std::vector<CaptureSession> rest = tracker.TakeAll(kT0 + 7 * kSecond);
  ASSERT_EQ(rest.size(), 1u);
  EXPECT_EQ(rest[0].end_unix_ns, kT0 + 7 * kSecond);
  EXPECT_EQ(tracker.active(), 0u);
}

TEST(SessionTrackerTest, OnlySessionsInsideTheSharedFolderAreConsidered) {
  TempDir dir;
  TempDir outside;
  WriteInPlace(outside.path() + "/capture.start", R"({"start_unix_ns": 1718000000000000000})");
  // A symlink inside pointing outside is no session of ours either.
  ASSERT_EQ(::symlink(outside.path().c_str(), (dir.path() + "/link").c_str()), 0);
  WriteInPlace(dir.path() + "/s1/capture.start", R"({"start_unix_ns": 1718000000000000000})");
  ErrorLog log(true);
  SessionTracker tracker(dir.path(), "metrics-h.eroica-metrics", &log);
  tracker.Poll(kT0, {outside.path(), dir.path() + "/link", dir.path() + "/s1/", dir.path() + "/.."});
  EXPECT_EQ(tracker.active(), 1u);  // s1 only
  EXPECT_EQ(log.count("outside-" + outside.path()), 1u);
  EXPECT_EQ(SessionFolderInside(dir.path(), dir.path() + "/s1/"), dir.path() + "/s1");
  EXPECT_EQ(SessionFolderInside(dir.path(), dir.path() + "/s1/../s1"), dir.path() + "/s1");
  EXPECT_EQ(SessionFolderInside(dir.path(), dir.path() + "/procs"), std::nullopt);
  EXPECT_EQ(SessionFolderInside(dir.path(), dir.path() + "/link"), std::nullopt);
  EXPECT_EQ(SessionFolderInside(dir.path(), outside.path()), std::nullopt);
  EXPECT_EQ(SessionFolderInside("", dir.path() + "/s1"), std::nullopt);
}

TEST(SessionTrackerTest, AFifoAsCaptureStartDoesNotBlock) {
  TempDir dir;
  std::filesystem::create_directories(dir.path() + "/s1");
  ASSERT_EQ(::mkfifo((dir.path() + "/s1/capture.start").c_str(), 0600), 0);
  ASSERT_EQ(::mkfifo((dir.path() + "/s1/capture.stop").c_str(), 0600), 0);
  ErrorLog log(true);
  SessionTracker tracker(dir.path(), "metrics-h.eroica-metrics", &log);
  tracker.Poll(INT64_MAX / 2, {});  // returns (the old reader blocked here for good)
  EXPECT_EQ(tracker.active(), 0u);
}

}  // namespace
}  // namespace eroica::agent
