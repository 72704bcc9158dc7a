#include "agent/agent.h"

#include <fmt/format.h>
#include <sys/resource.h>
#include <unistd.h>

#include <cctype>
#include <cmath>
#include <map>
#include <memory>

#include "agent/clock.h"
#include "agent/error_log.h"
#include "agent/gpu_collector.h"
#include "agent/host_collector.h"
#include "agent/job_verdict.h"
#include "agent/metrics_file_writer.h"
#include "agent/net_collector.h"
#include "agent/node_metrics_text.h"
#include "agent/process_collector.h"
#include "agent/process_registry.h"
#include "agent/prometheus_server.h"
#include "agent/prometheus_text.h"
#include "agent/rdma_collector.h"
#include "agent/sampler.h"
#include "agent/session_tracker.h"
#include "base/file_util.h"
#include "base/json_access.h"

namespace eroica::agent {
namespace {

constexpr int64_t kNsPerSecond = 1'000'000'000;
constexpr int64_t kLoopPeriodNs = 100'000'000;
// A new verdict appears once per diagnosis (minutes apart); a scan of the sessions folder is
// cheap, but a shared filesystem's metadata server need not see it every second.
constexpr int kVerdictPollEveryN = 5;

std::string HostName() {
  char name[256] = {0};
  if (::gethostname(name, sizeof(name) - 1) != 0) return "unknown-host";
  return name;
}

// More descriptors: one stays open per followed thread (see proc_file.h).
void RaiseFileLimit() {
  rlimit limit{};
  if (::getrlimit(RLIMIT_NOFILE, &limit) != 0) return;
  rlim_t wanted = std::min<rlim_t>(limit.rlim_max, 65536);
  if (limit.rlim_cur < wanted) {
    limit.rlim_cur = wanted;
    ::setrlimit(RLIMIT_NOFILE, &limit);
  }
}

int EveryN(double base_hz, double hz) { return std::max(1, static_cast<int>(std::lround(base_hz / hz))); }

}  // namespace

std::string MetricsFileName(const std::string& host) {
  std::string safe = host.empty() ? "unknown-host" : host;
  for (char& c : safe) {
    bool ok = std::isalnum(static_cast<unsigned char>(c)) || c == '-' || c == '_' || c == '.';
    if (!ok) c = '_';
  }
  return "metrics-" + safe + ".eroica-metrics";
}

Status ValidateAgentOptions(const AgentOptions& options) {
  if (options.dir.empty() && options.session_dir.empty()) {
    return ErrorStatus("give --dir DIR (daemon) or --session SESSION_DIR --duration S");
  }
  if (!(options.rate_hz > 0 && options.rate_hz <= 1000)) {
    return ErrorStatus("--rate-hz must be in (0, 1000]");
  }
  if (!(options.host_rate_hz > 0) || !(options.gpu_rate_hz > 0 && options.gpu_rate_hz <= 1000)) {
    return ErrorStatus("--host-rate-hz and --gpu-rate-hz must be positive");
  }
  if (!(options.buffer_s >= 5 && options.buffer_s <= 3600)) {
    return ErrorStatus("--buffer-s must be in [5, 3600]");
  }
  if (!options.session_dir.empty() && !(options.duration_s > 0 && options.duration_s <= 3600)) {
    return ErrorStatus("--session needs --duration in (0, 3600] seconds");
  }
  if (options.prometheus_port < 0 || options.prometheus_port > 65535) {
    return ErrorStatus("--prometheus-port must be in [0, 65535]");
  }
  return Status::Ok();
}

class Agent {
 public:
  explicit Agent(const AgentOptions& options);
  Status Start();
  void Housekeeping(int64_t now_ns);
  void WriteDueSessions(int64_t now_ns);
  void Shutdown();
  void AddSession(const CaptureSession& session) {
    sessions_.Add(session);
    PromiseMetrics();
  }
  uint64_t sessions_finished() const { return sessions_written_ + sessions_dropped_; }
  uint64_t sessions_written() const { return sessions_written_; }

 private:
  void WriteSession(const CaptureSession& session);
  void PromiseMetrics();
  std::string RenderMetrics();

  AgentOptions options_;
  ErrorLog log_;
  int64_t clock_ticks_per_s_;
  int64_t start_monotonic_ns_ = MonotonicNs();
  int64_t start_cpu_ns_ = ProcessCpuNs();
  SampleStore store_;
  ProcessRegistry registry_;
  SessionTracker sessions_;
  ProcessCollector processes_;
  HostCollector host_;
  NetCollector net_;
  RdmaCollector rdma_;
  std::unique_ptr<GpuCollector> gpu_;
  Sampler host_sampler_;
  std::unique_ptr<Sampler> gpu_sampler_;
  std::unique_ptr<PrometheusServer> prometheus_;
  std::unique_ptr<VerdictWatcher> verdict_;  // only with a Prometheus page
  int housekeeping_count_ = 0;
  std::atomic<uint64_t> sessions_written_{0};
  std::atomic<uint64_t> sessions_dropped_{0};
};

namespace {

StoreOptions MakeStoreOptions(const AgentOptions& options) {
  StoreOptions store;
  store.window_ns = static_cast<int64_t>(options.buffer_s * kNsPerSecond);
  // The window governs; the cap only guards memory should the clock misbehave.
  store.max_samples_per_series = static_cast<size_t>(options.buffer_s * options.rate_hz * 1.5) + 512;
  store.max_series = options.max_series;
  return store;
}

RegistryOptions MakeRegistryOptions(const AgentOptions& options, int64_t ticks_per_s) {
  RegistryOptions registry;
  registry.procs_dir = options.dir.empty() ? "" : options.dir + "/procs";
  registry.root = options.root;
  registry.clock_ticks_per_s = ticks_per_s;
  registry.forget_after_ns = static_cast<int64_t>(options.buffer_s * kNsPerSecond);
  return registry;
}

ProcessCollectorOptions MakeProcessOptions(const AgentOptions& options, int64_t ticks_per_s) {
  ProcessCollectorOptions process;
  process.root = options.root;
  process.clock_ticks_per_s = ticks_per_s;
  process.page_size_bytes = ::sysconf(_SC_PAGESIZE);
  process.max_threads_per_process = options.max_threads_per_process;
  process.thread_rescan_every_n = EveryN(options.rate_hz, 1.0);
  process.process_every_n = EveryN(options.rate_hz, options.host_rate_hz);
  process.idle_thread_every_n = EveryN(options.rate_hz, options.host_rate_hz);
  process.idle_after_samples = process.idle_thread_every_n;
  return process;
}

}  // namespace

Agent::Agent(const AgentOptions& options)
    : options_(options),
      log_(options.quiet),
      clock_ticks_per_s_(::sysconf(_SC_CLK_TCK)),
      store_(MakeStoreOptions(options)),
      registry_(MakeRegistryOptions(options, clock_ticks_per_s_), &log_),
      sessions_(options.dir, MetricsFileName(options.host), &log_),
      processes_(MakeProcessOptions(options, clock_ticks_per_s_), &log_),
      host_(options.root, clock_ticks_per_s_, &log_),
      net_({options.root, EveryN(options.rate_hz, 1.0), 64, EveryN(options.rate_hz, options.host_rate_hz)}, &log_),
      rdma_(options.root, EveryN(options.rate_hz, 1.0), &log_),
      host_sampler_("eroica-sampler", static_cast<int64_t>(kNsPerSecond / options.rate_hz), &store_) {
  for (int64_t pid : options.pids) registry_.AddManual(pid);
}

Status Agent::Start() {
  RaiseFileLimit();
  // The agent writes metrics files into these folders: they must be ours (see EnsureOwnDirectory).
  for (const std::string& dir : {options_.dir, options_.session_dir}) {
    if (!dir.empty()) EROICA_RETURN_IF_ERROR(EnsureOwnDirectory(dir));
  }
  if (options_.prometheus_port > 0) {
    std::string report_dir = options_.report_dir.empty() ? options_.dir : options_.report_dir;
    if (!report_dir.empty()) verdict_ = std::make_unique<VerdictWatcher>(report_dir);
    prometheus_ = std::make_unique<PrometheusServer>([this] { return RenderMetrics(); });
    EROICA_RETURN_IF_ERROR(prometheus_->Start(options_.prometheus_bind, options_.prometheus_port));
    log_.Info(fmt::format("Prometheus metrics on http://{}:{}/metrics", options_.prometheus_bind, prometheus_->port()));
  }
  if (options_.gpu) {
    StatusOr<NvmlApi> nvml = options_.load_nvml ? options_.load_nvml() : LoadNvml();
    if (nvml.ok()) {
      gpu_ = GpuCollector::Create(std::move(*nvml), EveryN(options_.gpu_rate_hz, 1.0), &log_);
    } else {
      log_.Info("no GPU monitoring: " + nvml.status().message());
    }
  }
  Housekeeping(RealtimeNs());  // know the processes before the first sample
  host_sampler_.Add(&processes_);
  host_sampler_.Add(&net_);
  host_sampler_.Add(&rdma_);
  host_sampler_.Add(&host_, EveryN(options_.rate_hz, options_.host_rate_hz));
  host_sampler_.Start();
  if (gpu_ != nullptr) {
    gpu_sampler_ =
        std::make_unique<Sampler>("eroica-gpu", static_cast<int64_t>(kNsPerSecond / options_.gpu_rate_hz), &store_);
    gpu_sampler_->Add(gpu_.get());
    gpu_sampler_->Start();
  }
  log_.Info(fmt::format("sampling at {} Hz, keeping {} s; shared folder: {}", options_.rate_hz, options_.buffer_s,
                        options_.dir.empty() ? "(none)" : options_.dir));
  return Status::Ok();
}

void Agent::Housekeeping(int64_t now_ns) {
  registry_.Scan(now_ns);
  std::vector<Registration> live = registry_.Live();
  std::vector<TrackedProcess> tracked;
  std::vector<std::string> session_dirs;
  for (const Registration& registration : live) {
    tracked.push_back({registration.pid, registration.rank});
    session_dirs.push_back(registration.session_dir);
  }
  processes_.SetProcesses(std::move(tracked));
  sessions_.Poll(now_ns, session_dirs);
  PromiseMetrics();
  store_.CollectGarbage(now_ns);
  if (verdict_ != nullptr && housekeeping_count_++ % kVerdictPollEveryN == 0) {
    if (Status status = verdict_->Poll(); !status.ok()) log_.Report("verdict", "latest verdict: " + status.message());
  }
}

// Each session it starts gets a promise of its file, <file>.due, {"host", "due_unix_ns"}: the
// Python side diagnoses a session as soon as its ranks' traces are in, and without a promise no
// agent took samples of it, so nothing is worth waiting for (agent_link.wait_for_metrics).
void Agent::PromiseMetrics() {
  for (const CaptureSession& session : sessions_.TakeStarted()) {
    std::string path = session.dir + "/" + MetricsFileName(options_.host) + ".due";
    std::string promise = Json{{"host", options_.host}, {"due_unix_ns", session.window_end_ns()}}.dump(
        -1, ' ', false, Json::error_handler_t::replace);
    if (Status status = WriteFileAtomically(path, promise, 0640); !status.ok()) {
      log_.Report("promise-" + session.dir,
                  fmt::format("cannot promise the metrics of session {}: {}", session.dir, status.message()));
    }
  }
}

void Agent::WriteDueSessions(int64_t now_ns) {
  for (const CaptureSession& session : sessions_.TakeDue(now_ns)) WriteSession(session);
}

void Agent::WriteSession(const CaptureSession& session) {
  MetricsFile file;
  file.host = options_.host;
  file.created_unix_ns = RealtimeNs();
  file.realtime_minus_monotonic_ns = RealtimeMinusMonotonicNs();
  file.window_start_unix_ns = session.window_start_ns();
  file.window_end_unix_ns = session.window_end_ns();
  file.clock_ticks_per_s = clock_ticks_per_s_;
  file.num_cpus = ::sysconf(_SC_NPROCESSORS_ONLN);
  file.sample_interval_ns = static_cast<int64_t>(kNsPerSecond / options_.rate_hz);
  std::map<int64_t, int> gpu_of = gpu_ ? gpu_->GpuOfProcess() : std::map<int64_t, int>();
  for (const Registration& process : registry_.SeenSince(file.window_start_unix_ns)) {
    int64_t gpu = process.gpu >= 0 ? process.gpu : gpu_of.count(process.pid) > 0 ? gpu_of[process.pid] : -1;
    file.processes.push_back({process.pid, process.rank, gpu});
  }
  int64_t oldest_ns = store_.OldestSampleNs();
  if (oldest_ns > file.window_start_unix_ns + kNsPerSecond) {
    log_.Report("window-" + session.dir, fmt::format("session {} starts before the oldest sample kept; its file covers "
                                                     "only the last {:.1f} s (raise --buffer-s)",
                                                     session.dir, (file.window_end_unix_ns - oldest_ns) / 1e9));
  }
  file.series = store_.Snapshot(file.window_start_unix_ns, file.window_end_unix_ns);
  std::string path = session.dir + "/" + MetricsFileName(options_.host);
  Status status = WriteMetricsFile(path, file);
  if (!status.ok()) {
    ++sessions_dropped_;
    log_.Report("write-" + session.dir,
                fmt::format("dropped the metrics of session {}: {}", session.dir, status.message()));
    return;
  }
  ++sessions_written_;
  log_.Info(fmt::format("wrote {} ({} series)", path, file.series.size()));
}

void Agent::Shutdown() {
  host_sampler_.Stop();
  if (gpu_sampler_) gpu_sampler_->Stop();
  for (const CaptureSession& session : sessions_.TakeAll(RealtimeNs())) WriteSession(session);
  if (prometheus_) prometheus_->Stop();
}

std::string Agent::RenderMetrics() {
  AgentHealth health;
  health.uptime_s = (MonotonicNs() - start_monotonic_ns_) / 1e9;
  health.cpu_s = (ProcessCpuNs() - start_cpu_ns_) / 1e9;
  StoreStats stats = store_.Stats();
  health.samples = stats.samples_recorded;
  health.dropped_samples = stats.samples_dropped;
  health.series = stats.series;
  health.buffer_bytes = stats.memory_bytes;
  health.host_ticks = host_sampler_.ticks();
  health.host_missed_ticks = host_sampler_.missed_ticks();
  health.gpu_ticks = gpu_sampler_ ? gpu_sampler_->ticks() : 0;
  health.gpu_missed_ticks = gpu_sampler_ ? gpu_sampler_->missed_ticks() : 0;
  health.tracked_threads = processes_.tracked_threads();
  health.gpus = gpu_ ? gpu_->device_count() : 0;
  health.errors = log_.total_errors();
  health.sessions_started = sessions_.started();
  health.sessions_written = sessions_written_.load();
  health.sessions_dropped = sessions_dropped_.load();
  std::vector<Registration> live = registry_.Live();
  std::string page = RenderPrometheusText(health, live);
  std::map<int64_t, int64_t> rank_of_pid;
  for (const Registration& process : live) rank_of_pid[process.pid] = process.rank;
  RenderNodeMetrics(store_.Latest(IsExportedSeries), rank_of_pid, &page);
  RenderVerdictMetrics(verdict_ ? verdict_->Latest() : std::nullopt, &page);
  return page;
}

std::vector<std::string> ExportedMetricNames() {
  std::vector<std::string> names = HealthMetricNames();
  for (std::vector<std::string> more : {NodeMetricNames(), VerdictMetricNames()}) {
    names.insert(names.end(), more.begin(), more.end());
  }
  return names;
}

Status RunAgent(const AgentOptions& given, const std::atomic<bool>& stop) {
  EROICA_RETURN_IF_ERROR(ValidateAgentOptions(given));
  AgentOptions options = given;
  if (options.host.empty()) options.host = HostName();
  bool manual = !options.session_dir.empty();
  if (manual) options.buffer_s = std::max(options.buffer_s, options.duration_s + 10);
  Agent agent(options);
  EROICA_RETURN_IF_ERROR(agent.Start());
  if (manual) {
    int64_t now_ns = RealtimeNs();
    agent.AddSession(
        {options.session_dir, now_ns, now_ns + static_cast<int64_t>(options.duration_s * kNsPerSecond), true});
  }
  int64_t next_housekeeping_ns = MonotonicNs() + kNsPerSecond;
  while (!stop.load() && !(manual && agent.sessions_finished() > 0)) {
    if (MonotonicNs() >= next_housekeeping_ns) {
      agent.Housekeeping(RealtimeNs());
      next_housekeeping_ns += kNsPerSecond;
    }
    agent.WriteDueSessions(RealtimeNs());
    SleepUntilMonotonicNs(MonotonicNs() + kLoopPeriodNs);
  }
  agent.Shutdown();
  if (manual && agent.sessions_written() == 0) {
    return ErrorStatus("could not write the metrics file of {}", options.session_dir);
  }
  return Status::Ok();
}

}  // namespace eroica::agent
