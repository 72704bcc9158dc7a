// CPU time and memory of the registered training processes and of each of their threads:
//   proc.cpu_ns      counter  utime+stime of /proc/<pid>/stat, in ns
//   proc.rss_bytes   gauge    resident set (stat field 24 × page size)
//   thread.cpu_ns    counter  per thread: /proc/<pid>/task/<tid>/schedstat (ns) when the
//                             kernel fills it, else utime+stime of task/<tid>/stat
// Ticks become ns with the tick rate from sysconf(_SC_CLK_TCK). The thread list is re-read
// every thread_rescan_every_n samples (about once a second); per process at most
// max_threads_per_process threads are followed (the first ones listed).
//
// Cost control (each read of a stat file is ~1.5 µs of kernel time, more with cold caches):
// the per-thread series carry the detail, so the process total and RSS are read every
// process_every_n samples only; and a thread whose CPU time did not move for
// idle_after_samples samples is read every idle_thread_every_n samples until it moves again
// (PyTorch processes have dozens of mostly idle threads). Its series then has wider gaps;
// rates over them are still exact averages.
#pragma once

#include <atomic>
#include <cstdint>
#include <map>
#include <mutex>
#include <optional>
#include <string>
#include <vector>

#include "agent/collector.h"
#include "agent/error_log.h"
#include "agent/proc_file.h"

namespace eroica::agent {

struct TrackedProcess {
  int64_t pid = -1;
  int64_t rank = -1;
};

struct ProcessCollectorOptions {
  std::string root;  // prepended to "/proc/..."; "" for the real one
  int64_t clock_ticks_per_s = 100;
  int64_t page_size_bytes = 4096;
  size_t max_threads_per_process = 256;
  int thread_rescan_every_n = 100;
  int process_every_n = 10;
  int idle_thread_every_n = 10;
  int idle_after_samples = 10;
};

class ProcessCollector : public Collector {
 public:
  ProcessCollector(const ProcessCollectorOptions& options, ErrorLog* log);

  std::string_view name() const override { return "process"; }
  void Sample(int64_t now_ns) override;
  void Emit(MetricSink& sink) override;

  // Thread-safe; takes effect at the next Sample().
  void SetProcesses(std::vector<TrackedProcess> processes);
  size_t tracked_threads() const;

 private:
  struct Thread {
    int64_t tid = -1;
    std::string comm;
    ProcFile file;
    bool use_schedstat = false;
    int64_t cpu_ns = 0;       // the latest reading
    bool fresh = false;       // read at this sample: emit it
    bool fresh_once = false;  // read at least once
    int unchanged_samples = 0;
    SeriesId id = kNoSeries;
  };
  struct Process {
    TrackedProcess tracked;
    ProcFile stat;
    uint64_t sample_index = 0;
    bool fresh = false;  // cpu_ns and rss_bytes read at this sample
    int64_t cpu_ns = 0;
    int64_t rss_bytes = 0;
    std::map<int64_t, Thread> threads;
    int samples_until_rescan = 0;
    SeriesId cpu_id = kNoSeries;
    SeriesId rss_id = kNoSeries;
  };

  void ApplyPending();
  bool SampleProcess(Process* process);
  bool RescanThreads(Process* process);
  bool AddThread(Process* process, int64_t tid);
  bool SampleThread(Thread* thread);
  int64_t NsPerTick() const { return 1'000'000'000 / options_.clock_ticks_per_s; }
  void ReleaseProcess(const Process& process);
  std::string ProcPath(int64_t pid) const;

  ProcessCollectorOptions options_;
  ErrorLog* log_;
  int64_t last_now_ns_ = 0;
  std::map<int64_t, Process> processes_;
  std::vector<SeriesId> to_release_;

  mutable std::mutex pending_mu_;
  std::optional<std::vector<TrackedProcess>> pending_;
  std::atomic<size_t> tracked_threads_{0};
};

}  // namespace eroica::agent
