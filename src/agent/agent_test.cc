// The whole agent, end to end, on the real /proc and /sys of the test machine.
#include "agent/agent.h"

#include <arpa/inet.h>
#include <fcntl.h>
#include <fmt/format.h>
#include <gtest/gtest.h>
#include <netinet/in.h>
#include <sys/mount.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <unistd.h>

#include <filesystem>
#include <fstream>
#include <iterator>
#include <thread>

#include "agent/clock.h"
#include "agent/metrics_file.h"
#include "agent/test_util.h"
#include "agent/utilization.h"
#include "base/file_util.h"
#include "base/json_access.h"
#include "base/temp_dir.h"

namespace eroica::agent {
namespace {

using testing::WriteInPlace;

constexpr int64_t kSecond = 1'000'000'000;

int FreePort() {
  int fd = ::socket(AF_INET, SOCK_STREAM, 0);
  sockaddr_in address{};
  address.sin_family = AF_INET;
  address.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  ::bind(fd, reinterpret_cast<sockaddr*>(&address), sizeof(address));
  socklen_t length = sizeof(address);
  ::getsockname(fd, reinterpret_cast<sockaddr*>(&address), &length);
  ::close(fd);
  return ntohs(address.sin_port);
}

std::string HttpGet(int port, const std::string& path) {
  int fd = ::socket(AF_INET, SOCK_STREAM, 0);
  sockaddr_in address{};
  address.sin_family = AF_INET;
  address.sin_port = htons(static_cast<uint16_t>(port));
  address.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  std::string reply;
  if (::connect(fd, reinterpret_cast<sockaddr*>(&address), sizeof(address)) == 0) {
    std::string request = "GET " + path + " HTTP/1.0\r\n\r\n";
    ::send(fd, request.data(), request.size(), MSG_NOSIGNAL);
    char buffer[4096];
    ssize_t n;
    while ((n = ::recv(fd, buffer, sizeof(buffer), 0)) > 0) reply.append(buffer, n);
  }
  ::close(fd);
  return reply;
}

bool WaitFor(const std::function<bool()>& condition, double seconds) {
  int64_t deadline = MonotonicNs() + static_cast<int64_t>(seconds * kSecond);
  while (MonotonicNs() < deadline) {
    if (condition()) return true;
    ::usleep(20'000);
  }
  return condition();
}

AgentOptions TestOptions(const std::string& dir) {
  AgentOptions options;
  options.dir = dir;
  options.host = "test-host";
  options.buffer_s = 30;
  options.quiet = true;
  options.load_nvml = [] { return StatusOr<NvmlApi>(ErrorStatus("no NVML in this test")); };
  return options;
}

void WriteCaptureStart(const std::string& session_dir, int64_t start_ns, double duration_s) {
  WriteInPlace(session_dir + "/capture.start",
               fmt::format(R"({{"start_unix_ns": {}, "duration_s": {}}})", start_ns, duration_s));
}

TEST(AgentTest, DaemonWritesTheSessionFileOfARegisteredProcess) {
  TempDir dir;
  WriteInPlace(dir.path() + fmt::format("/procs/{}.json", ::getpid()),
               fmt::format(R"({{"pid": {}, "rank": 5, "session_dir": null, "host": "h",
                               "last_iteration_s": 0.3}})",
                           ::getpid()));
  AgentOptions options = TestOptions(dir.path());
  options.prometheus_port = FreePort();
  std::atomic<bool> stop{false};
  Status status;
  std::thread agent([&] { status = RunAgent(options, stop); });
  std::string page;
  ASSERT_TRUE(WaitFor(
      [&] {
        page = HttpGet(options.prometheus_port, "/metrics");
        return page.find("eroica_agent_registered_processes 1\n") != std::string::npos;
      },
      5))
      << page;
  EXPECT_NE(page.find("eroica_training_last_iteration_seconds{rank=\"5\""), std::string::npos);

  int64_t start_ns = RealtimeNs();
  WriteCaptureStart(dir.path() + "/s1", start_ns, 1.0);
  std::string path = dir.path() + "/s1/metrics-test-host.eroica-metrics";
  // The promise comes with the next scan (a second), long before the file is due.
  bool promised = WaitFor([&] { return std::filesystem::exists(path + ".due"); }, 3);
  volatile uint64_t spins = 0;  // give this process some CPU time to be seen
  while (RealtimeNs() < start_ns + kSecond) spins = spins + 1;
  bool written = WaitFor([&] { return std::filesystem::exists(path); }, 6);
  stop.store(true);
  agent.join();
  ASSERT_TRUE(status.ok()) << status.message();
  ASSERT_TRUE(promised);
  StatusOr<std::string> promise = ReadSmallFile(path + ".due");
  ASSERT_TRUE(promise.ok());
  std::optional<Json> due = ParseJson(*promise);
  ASSERT_TRUE(due.has_value()) << *promise;
  EXPECT_EQ((*due)["host"], "test-host");
  EXPECT_EQ((*due)["due_unix_ns"].get<int64_t>(), start_ns + 2 * kSecond);
  ASSERT_TRUE(written);
  EXPECT_LE(std::filesystem::last_write_time(path + ".due"), std::filesystem::last_write_time(path));

  StatusOr<MetricsFile> file = ReadMetricsFile(path);
  ASSERT_TRUE(file.ok()) << file.status().message();
  EXPECT_EQ(file->host, "test-host");
  EXPECT_EQ(file->window_start_unix_ns, start_ns - kSecond);
  EXPECT_EQ(file->window_end_unix_ns, start_ns + 2 * kSecond);
  ASSERT_EQ(file->processes.size(), 1u);
  EXPECT_EQ(file->processes[0].pid, ::getpid());
  EXPECT_EQ(file->processes[0].rank, 5);
  const MetricsSeries* cpu = file->Find("proc.cpu_ns", ::getpid());
  ASSERT_NE(cpu, nullptr);
  EXPECT_GE(cpu->ts_unix_ns.size(), 10u);  // ≥ 1 s at the host rate, 10 Hz
  EXPECT_GE(cpu->ts_unix_ns.front(), file->window_start_unix_ns);
  EXPECT_LE(cpu->ts_unix_ns.back(), file->window_end_unix_ns);
  EXPECT_GT(cpu->values.back(), cpu->values.front());
  const MetricsSeries* main_thread = file->Find("thread.cpu_ns", ::getpid(), ::getpid());
  ASSERT_NE(main_thread, nullptr);
  // Busy for 1 s, so read at 100 Hz (10 Hz when idle); a loaded test machine skips some ticks.
  EXPECT_GE(main_thread->ts_unix_ns.size(), 50u);
  auto utilization = UtilizationForProcess(*file, ::getpid());
  ASSERT_TRUE(utilization.ok());
  ASSERT_FALSE(utilization->empty());
  EXPECT_EQ((*utilization)[0].resource, ResourceKind::kCpu);
}

TEST(AgentTest, ManualSessionSamplesWritesAndExits) {
  TempDir dir;
  AgentOptions options = TestOptions("");
  options.session_dir = dir.path();
  options.duration_s = 0.5;
  options.pids = {::getpid()};
  std::atomic<bool> stop{false};
  int64_t begin_ns = MonotonicNs();
  Status status = RunAgent(options, stop);
  ASSERT_TRUE(status.ok()) << status.message();
  EXPECT_LT(MonotonicNs() - begin_ns, 4 * kSecond);
  StatusOr<MetricsFile> file = ReadMetricsFile(dir.path() + "/metrics-test-host.eroica-metrics");
  ASSERT_TRUE(file.ok()) << file.status().message();
  EXPECT_NE(file->Find("proc.cpu_ns", ::getpid()), nullptr);
  EXPECT_NE(file->Find("host.cpu_busy_ns", -1, -1, "cpu"), nullptr);
  EXPECT_TRUE(std::filesystem::exists(dir.path() + "/metrics-test-host.eroica-metrics.due"));
}

TEST(AgentTest, StopFlushesOpenSessions) {
  TempDir dir;
  AgentOptions options = TestOptions(dir.path());
  std::atomic<bool> stop{false};
  Status status;
  std::thread agent([&] { status = RunAgent(options, stop); });
  int64_t start_ns = RealtimeNs();
  WriteCaptureStart(dir.path() + "/long", start_ns, 60);
  ::usleep(1'500'000);  // the agent finds it within a second
  int64_t stop_ns = RealtimeNs();
  stop.store(true);
  agent.join();
  ASSERT_TRUE(status.ok());
  StatusOr<MetricsFile> file = ReadMetricsFile(dir.path() + "/long/metrics-test-host.eroica-metrics");
  ASSERT_TRUE(file.ok()) << file.status().message();
  EXPECT_LT(file->window_end_unix_ns, stop_ns + 2 * kSecond);
  EXPECT_FALSE(file->series.empty());
}

TEST(AgentTest, FullDiskDropsTheFileAndKeepsRunning) {
  if (::geteuid() != 0) GTEST_SKIP() << "needs root to mount a small tmpfs";
  TempDir dir;
  std::string disk = dir.path() + "/disk";
  std::filesystem::create_directories(disk);
  if (::mount("tmpfs", disk.c_str(), "tmpfs", 0, "size=64k") != 0) {
    GTEST_SKIP() << "cannot mount tmpfs here";
  }
  WriteCaptureStart(disk + "/s1", RealtimeNs(), 0.2);
  int filler = ::open((disk + "/filler").c_str(), O_WRONLY | O_CREAT, 0644);  // fill the disk
  std::string block(4096, 'x');
  for (int i = 0; i < 64 && ::write(filler, block.data(), block.size()) > 0; ++i) {
  }
  while (::write(filler, "x", 1) == 1) {
  }
  ::close(filler);
  AgentOptions options = TestOptions(disk);
  options.prometheus_port = FreePort();
  std::atomic<bool> stop{false};
  Status status;
  std::thread agent([&] { status = RunAgent(options, stop); });
  bool dropped = WaitFor(
      [&] {
        return HttpGet(options.prometheus_port, "/metrics").find("eroica_agent_sessions_dropped_total 1\n") !=
               std::string::npos;
      },
      6);
  std::string page = HttpGet(options.prometheus_port, "/metrics");
  stop.store(true);
  agent.join();
  bool has_metrics = std::filesystem::exists(disk + "/s1/metrics-test-host.eroica-metrics");
  bool has_tmp = false;  // no temporary (metrics-…eroica-metrics.tmp.PID.N) left behind
  for (const auto& entry : std::filesystem::directory_iterator(disk + "/s1")) {
    has_tmp = has_tmp || entry.path().filename().string().find(".tmp") != std::string::npos;
  }
  ::umount(disk.c_str());
  EXPECT_TRUE(dropped) << page;
  EXPECT_NE(page.find("eroica_agent_up 1"), std::string::npos);  // still serving
  EXPECT_TRUE(status.ok());
  EXPECT_FALSE(has_metrics);
  EXPECT_FALSE(has_tmp);
}

// The agent used to write PATH.tmp with fopen "wb" and rename it: a symlink planted at that
// name made it (as root) overwrite any file.
TEST(AgentTest, APlantedSymlinkAtTheTemporaryNameIsNotFollowed) {
  TempDir dir;
  TempDir elsewhere;
  std::string victim = elsewhere.Write("victim", "precious");
  std::string session = dir.path() + "/s1";
  std::filesystem::create_directories(session);
  ASSERT_EQ(::symlink(victim.c_str(), (session + "/metrics-test-host.eroica-metrics.tmp").c_str()), 0);
  AgentOptions options = TestOptions("");
  options.session_dir = session;
  options.duration_s = 0.3;
  options.pids = {::getpid()};
  std::atomic<bool> stop{false};
  Status status = RunAgent(options, stop);
  ASSERT_TRUE(status.ok()) << status.message();
  std::ifstream in(victim);
  std::string contents((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
  EXPECT_EQ(contents, "precious");
  EXPECT_TRUE(ReadMetricsFile(session + "/metrics-test-host.eroica-metrics").ok());
}

// A registration used to pick any folder for the agent to write into.
TEST(AgentTest, WritesOnlyIntoSessionsInsideItsFolder) {
  TempDir dir;
  TempDir elsewhere;
  WriteCaptureStart(elsewhere.path(), RealtimeNs(), 0.2);
  WriteInPlace(dir.path() + fmt::format("/procs/{}.json", ::getpid()),
               fmt::format(R"({{"pid": {}, "rank": 0, "session_dir": "{}"}})", ::getpid(), elsewhere.path()));
  AgentOptions options = TestOptions(dir.path());
  std::atomic<bool> stop{false};
  Status status;
  std::thread agent([&] { status = RunAgent(options, stop); });
  ::usleep(2'500'000);  // the session would be due 1.2 s after it started
  stop.store(true);
  agent.join();
  ASSERT_TRUE(status.ok()) << status.message();
  EXPECT_FALSE(std::filesystem::exists(elsewhere.path() + "/metrics-test-host.eroica-metrics"));
}

TEST(AgentTest, RefusesAFolderOthersCanWriteInto) {
  TempDir dir;
  ASSERT_EQ(::chmod(dir.path().c_str(), 0777), 0);
  AgentOptions options = TestOptions(dir.path());
  std::atomic<bool> stop{true};
  Status status = RunAgent(options, stop);
  ASSERT_FALSE(status.ok());
  EXPECT_NE(status.message().find("writable by every user"), std::string::npos) << status.message();
}

}  // namespace
}  // namespace eroica::agent
