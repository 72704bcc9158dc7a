// `eroica agent`: the node daemon (see src/agent/README.md).
#include <fmt/core.h>
#include <pthread.h>
#include <signal.h>

#include <atomic>
#include <thread>

#include "agent/agent.h"
#include "cli/commands.h"

namespace eroica {
namespace {

// SIGTERM/SIGINT are blocked in every thread and picked up here, so no handler and no global
// is needed: the waiter sets `stop`, RunAgent flushes and returns.
class SignalWaiter {
 public:
  explicit SignalWaiter(std::atomic<bool>* stop) : stop_(stop) {
    sigemptyset(&signals_);
    sigaddset(&signals_, SIGTERM);
    sigaddset(&signals_, SIGINT);
    pthread_sigmask(SIG_BLOCK, &signals_, nullptr);
    thread_ = std::thread([this] { Wait(); });
  }
  ~SignalWaiter() {
    done_.store(true);
    thread_.join();
  }

 private:
  void Wait() {
    timespec timeout{0, 200'000'000};
    while (!done_.load()) {
      int signal = sigtimedwait(&signals_, nullptr, &timeout);
      if (signal == SIGTERM || signal == SIGINT) stop_->store(true);
    }
  }

  std::atomic<bool>* stop_;
  std::atomic<bool> done_{false};
  sigset_t signals_;
  std::thread thread_;
};

int RunAgentCommand(const agent::AgentOptions& options) {
  std::atomic<bool> stop{false};
  Status status;
  {
    SignalWaiter waiter(&stop);
    status = agent::RunAgent(options, stop);
  }
  if (!status.ok()) {
    fmt::print(stderr, "eroica agent: {}\n", status.message());
    return 1;
  }
  return 0;
}

}  // namespace

void RegisterAgentCommand(CLI::App& app, int* exit_code) {
  struct Flags {
    agent::AgentOptions agent;
    bool no_gpu = false;
    bool list_metrics = false;
  };
  auto flags = std::make_shared<Flags>();
  agent::AgentOptions* options = &flags->agent;
  CLI::App* command = app.add_subcommand("agent",
                                         "Node agent: sample CPU, memory, NICs, RDMA and GPUs; write each capture "
                                         "session's metrics file");
  command->add_option("--dir", options->dir,
                      "Shared folder: DIR/procs/<pid>.json registrations, DIR/<id>/capture.start");
  command->add_option("--session", options->session_dir,
                      "By hand: sample this session folder for --duration seconds, write, exit");
  command->add_option("--duration", options->duration_s, "Seconds to sample with --session");
  command->add_option("--rate-hz", options->rate_hz, "Samples per second (processes, NICs)")->capture_default_str();
  command->add_option("--host-rate-hz", options->host_rate_hz, "Samples per second of per-core CPU and memory")
      ->capture_default_str();
  command->add_option("--gpu-rate-hz", options->gpu_rate_hz, "Samples per second of NVML")->capture_default_str();
  command->add_option("--buffer-s", options->buffer_s, "Seconds of history kept in memory")->capture_default_str();
  command->add_option("--prometheus-port", options->prometheus_port, "Serve GET /metrics on this port (0: off)")
      ->capture_default_str();
  command->add_option("--prometheus-bind", options->prometheus_bind, "Address the Prometheus endpoint binds")
      ->capture_default_str();
  command->add_option("--report-dir", options->report_dir,
                      "Folder of sessions whose newest report.json is the verdict on /metrics (default: --dir)");
  command->add_flag("--list-metrics", flags->list_metrics, "Print every metric name /metrics can export, and exit");
  command->add_option("--host", options->host, "Host name in file names (default: hostname)");
  command->add_option("--pid", options->pids, "Also watch this process (repeatable)");
  command->add_option("--max-threads-per-process", options->max_threads_per_process, "Threads followed per process")
      ->capture_default_str();
  command->add_option("--root", options->root, "Read /proc and /sys under this prefix (tests, chroots)");
  command->add_flag("--no-gpu", flags->no_gpu, "Do not load NVML");
  command->callback([flags, exit_code] {
    if (flags->list_metrics) {
      for (const std::string& name : agent::ExportedMetricNames()) fmt::print("{}\n", name);
      *exit_code = 0;
      return;
    }
    flags->agent.gpu = !flags->no_gpu;
    *exit_code = RunAgentCommand(flags->agent);
  });
}

}  // namespace eroica
