// NIC counters on a real veth pair between two network namespaces this test creates (nothing
// is configured in the host's own namespace). The collector reads namespace A's sysfs through
// /proc/<pid>/root of a process living in it (`ip netns exec` remounts /sys there), which is
// what the collector's root-directory parameter is for.
#include <fmt/format.h>
#include <gtest/gtest.h>
#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <filesystem>

#include "agent/clock.h"
#include "agent/net_collector.h"
#include "agent/sampler.h"

namespace eroica::agent {
namespace {

int Shell(const std::string& command) { return std::system((command + " >/dev/null 2>&1").c_str()); }

pid_t SpawnArgs(std::vector<std::string> args) {
  pid_t pid = ::fork();
  if (pid == 0) {
    std::vector<char*> argv;
    for (std::string& arg : args) argv.push_back(arg.data());
    argv.push_back(nullptr);
    ::execvp(argv[0], argv.data());
    ::_exit(127);
  }
  return pid;
}

constexpr const char* kReceiver = R"(
import socket
s = socket.socket(); s.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
s.bind(('10.213.0.2', 5201)); s.listen(4)
while True:
    c, _ = s.accept()
    while c.recv(1 << 16): pass
    c.close()
)";

constexpr const char* kSender = R"(
import socket, sys, time
deadline = time.time() + 3
while True:
    try:
        s = socket.create_connection(('10.213.0.2', 5201), timeout=0.5); break
    except OSError:
        if time.time() > deadline: raise
        time.sleep(0.05)
limit, end = int(sys.argv[1]), time.time() + float(sys.argv[2])
buf, sent = b'x' * 65536, 0
while sent < limit and time.time() < end:
    try: sent += s.send(buf)
    except socket.timeout: pass
s.close()
)";

class NetnsTest : public ::testing::Test {
 protected:
  void SetUp() override {
    if (::geteuid() != 0) GTEST_SKIP() << "needs root to create network namespaces";
    if (Shell("ip netns list") != 0) GTEST_SKIP() << "`ip netns` is not available";
    int id = static_cast<int>(::getpid() % 100000);
    ns_a_ = fmt::format("eroica-a-{}", id);
    ns_b_ = fmt::format("eroica-b-{}", id);
    veth_a_ = fmt::format("erva{}", id);
    std::string veth_b = fmt::format("ervb{}", id);
    bool ok = Shell("ip netns add " + ns_a_) == 0 && Shell("ip netns add " + ns_b_) == 0 &&
              Shell(fmt::format("ip link add {} netns {} type veth peer name {} netns {}", veth_a_, ns_a_, veth_b,
                                ns_b_)) == 0 &&
              Shell(fmt::format("ip -n {} addr add 10.213.0.1/24 dev {}", ns_a_, veth_a_)) == 0 &&
              Shell(fmt::format("ip -n {} link set {} up", ns_a_, veth_a_)) == 0 &&
              Shell(fmt::format("ip -n {} addr add 10.213.0.2/24 dev {}", ns_b_, veth_b)) == 0 &&
              Shell(fmt::format("ip -n {} link set {} up", ns_b_, veth_b)) == 0;
    if (!ok) GTEST_SKIP() << "cannot set up a veth pair between namespaces here";
    // A process in namespace A whose /sys shows A's interfaces.
    watcher_ = SpawnArgs({"ip", "netns", "exec", ns_a_, "sleep", "60"});
    receiver_ = SpawnArgs({"ip", "netns", "exec", ns_b_, EROICA_PYTHON, "-c", kReceiver});
    root_ = fmt::format("/proc/{}/root", watcher_);
    for (int i = 0; i < 100 && !std::filesystem::exists(SysPath()); ++i) ::usleep(20'000);
    if (!std::filesystem::exists(SysPath())) GTEST_SKIP() << "cannot see namespace A's sysfs";
  }

  void TearDown() override {
    for (pid_t pid : {watcher_, receiver_}) {
      if (pid > 0) {
        ::kill(pid, SIGKILL);
        ::waitpid(pid, nullptr, 0);
      }
    }
    if (!ns_a_.empty()) Shell("ip netns del " + ns_a_);  // also removes the veth pair
    if (!ns_b_.empty()) Shell("ip netns del " + ns_b_);
  }

  std::string SysPath() const { return root_ + "/sys/class/net/" + veth_a_ + "/statistics"; }

  // Sends up to `bytes` from A to B for at most `seconds` while sampling A at 100 Hz; returns
  // the tx bytes of A's veth and the seconds between the first and last sample that moved.
  std::pair<int64_t, double> SendAndMeasure(int64_t bytes, double seconds) {
    ErrorLog log(true);
    SampleStore store{StoreOptions{}};
    NetCollector collector({root_, 100, 64}, &log);
    Sampler sampler("test-net", 10'000'000, &store);
    sampler.Add(&collector);
    int64_t start_ns = RealtimeNs();
    sampler.Start();
    pid_t sender = SpawnArgs(
        {"ip", "netns", "exec", ns_a_, EROICA_PYTHON, "-c", kSender, std::to_string(bytes), std::to_string(seconds)});
    ::waitpid(sender, nullptr, 0);
    ::usleep(200'000);
    sampler.Stop();
    for (const MetricsSeries& series : store.Snapshot(start_ns, RealtimeNs())) {
      if (series.info.name != "net.tx_bytes" || series.info.instance != veth_a_) continue;
      size_t first = 0, last = 0;
      bool moved = false;
      for (size_t i = 1; i < series.values.size(); ++i) {
        if (series.values[i] == series.values[i - 1]) continue;
        if (!moved) first = i - 1;
        moved = true;
        last = i;
      }
      return {series.values.back() - series.values.front(), (series.ts_unix_ns[last] - series.ts_unix_ns[first]) / 1e9};
    }
    return {-1, 0};
  }

  std::string ns_a_, ns_b_, veth_a_, root_;
  pid_t watcher_ = -1, receiver_ = -1;
};

TEST_F(NetnsTest, CountersFollowTrafficAndTbfCapsTheRate) {
  auto [free_bytes, free_s] = SendAndMeasure(20'000'000, 5);
  EXPECT_GE(free_bytes, 20'000'000) << "the veth did not count the transfer";
  ASSERT_EQ(Shell(fmt::format("ip netns exec {} tc qdisc add dev {} root tbf rate 1mbit "
                              "burst 16kb latency 100ms",
                              ns_a_, veth_a_)),
            0);
  auto [capped_bytes, capped_s] = SendAndMeasure(100'000'000, 2);
  ASSERT_GT(capped_s, 1.0);
  double rate = capped_bytes / capped_s;  // bytes/s while traffic flowed
  fmt::print(stderr, "uncapped: {} bytes in {:.3f} s; tbf 1mbit: {} bytes in {:.3f} s = {:.0f} B/s\n", free_bytes,
             free_s, capped_bytes, capped_s, rate);
  EXPECT_GT(capped_bytes, 50'000);
  // 1 Mbit/s is 125,000 bytes/s; allow the 16 kB burst and framing overhead.
  EXPECT_LT(rate, 125'000 * 1.4) << capped_bytes << " bytes in " << capped_s << " s";
  EXPECT_GT(free_bytes / std::max(free_s, 0.01), 10 * rate);
}

}  // namespace
}  // namespace eroica::agent
