#include "agent/process_collector.h"

#include <dirent.h>
#include <fmt/format.h>

#include <algorithm>

#include "agent/proc_parsers.h"

namespace eroica::agent {
namespace {

// Thread ids listed in <proc>/task, ascending; empty when the process is gone.
std::vector<int64_t> ListTids(const std::string& task_dir) {
  std::vector<int64_t> tids;
  DIR* dir = ::opendir(task_dir.c_str());
  if (dir == nullptr) return tids;
  while (dirent* entry = ::readdir(dir)) {
    int64_t tid = 0;
    if (entry->d_name[0] >= '0' && entry->d_name[0] <= '9' && ParseInt64(entry->d_name, &tid)) {
      tids.push_back(tid);
    }
  }
  ::closedir(dir);
  std::sort(tids.begin(), tids.end());
  return tids;
}

}  // namespace

ProcessCollector::ProcessCollector(const ProcessCollectorOptions& options, ErrorLog* log)
    : options_(options), log_(log) {
  if (options_.clock_ticks_per_s <= 0) options_.clock_ticks_per_s = 100;
  options_.thread_rescan_every_n = std::max(options_.thread_rescan_every_n, 1);
  options_.process_every_n = std::max(options_.process_every_n, 1);
  options_.idle_thread_every_n = std::max(options_.idle_thread_every_n, 1);
}

void ProcessCollector::SetProcesses(std::vector<TrackedProcess> processes) {
  std::lock_guard<std::mutex> lock(pending_mu_);
  pending_ = std::move(processes);
}

size_t ProcessCollector::tracked_threads() const { return tracked_threads_.load(); }

std::string ProcessCollector::ProcPath(int64_t pid) const { return fmt::format("{}/proc/{}", options_.root, pid); }

void ProcessCollector::ApplyPending() {
  std::optional<std::vector<TrackedProcess>> pending;
  {
    std::lock_guard<std::mutex> lock(pending_mu_);
    pending.swap(pending_);
  }
  if (!pending) return;
  std::map<int64_t, TrackedProcess> wanted;
  for (const TrackedProcess& process : *pending) wanted[process.pid] = process;
  for (auto it = processes_.begin(); it != processes_.end();) {
    if (wanted.count(it->first) == 0) {
      ReleaseProcess(it->second);
      it = processes_.erase(it);
    } else {
      it->second.tracked = wanted[it->first];
      ++it;
    }
  }
  for (const auto& [pid, tracked] : wanted) {
    if (processes_.count(pid) > 0 || pid <= 0) continue;
    Process& process = processes_[pid];
    process.tracked = tracked;
    process.stat = ProcFile(ProcPath(pid) + "/stat");
  }
}

void ProcessCollector::Sample(int64_t now_ns) {
  last_now_ns_ = now_ns;
  ApplyPending();
  size_t threads = 0;
  for (auto it = processes_.begin(); it != processes_.end();) {
    if (!SampleProcess(&it->second)) {
      ReleaseProcess(it->second);  // gone; the registry drops it too
      it = processes_.erase(it);
      continue;
    }
    threads += it->second.threads.size();
    ++it;
  }
  tracked_threads_.store(threads);
}

bool ProcessCollector::SampleProcess(Process* process) {
  uint64_t index = process->sample_index++;
  process->fresh = false;
  if (index % static_cast<uint64_t>(options_.process_every_n) == 0) {
    ProcStat stat;
    if (!process->stat.Read() || !ParseProcStat(process->stat.contents(), &stat)) return false;
    process->cpu_ns = (stat.utime_ticks + stat.stime_ticks) * NsPerTick();
    process->rss_bytes = stat.rss_pages * options_.page_size_bytes;
    process->fresh = true;
  }
  if (--process->samples_until_rescan <= 0) {
    process->samples_until_rescan = options_.thread_rescan_every_n;
    if (!RescanThreads(process)) return false;  // no threads listed: the process is gone
  }
  bool idle_turn = index % static_cast<uint64_t>(options_.idle_thread_every_n) == 0;
  for (auto it = process->threads.begin(); it != process->threads.end();) {
    Thread& thread = it->second;
    thread.fresh = false;
    bool idle = thread.unchanged_samples >= options_.idle_after_samples;
    if (idle && !idle_turn) {
      ++it;
      continue;
    }
    if (!SampleThread(&thread)) {  // the thread exited
      to_release_.push_back(thread.id);
      it = process->threads.erase(it);
      continue;
    }
    ++it;
  }
  return true;
}

bool ProcessCollector::RescanThreads(Process* process) {
  std::vector<int64_t> tids = ListTids(ProcPath(process->tracked.pid) + "/task");
  if (tids.empty()) return false;
  std::map<int64_t, Thread> kept;
  for (int64_t tid : tids) {
    auto it = process->threads.find(tid);
    if (it != process->threads.end()) {
      kept.insert(process->threads.extract(it));
    } else if (kept.size() < options_.max_threads_per_process) {
      if (AddThread(process, tid)) kept.insert(process->threads.extract(tid));
    } else {
      log_->Report(fmt::format("threads-cap-{}", process->tracked.pid),
                   fmt::format("pid {} has more than {} threads; following the first {}", process->tracked.pid,
                               options_.max_threads_per_process, options_.max_threads_per_process));
    }
  }
  for (const auto& [tid, thread] : process->threads) to_release_.push_back(thread.id);
  process->threads = std::move(kept);
  return true;
}

bool ProcessCollector::AddThread(Process* process, int64_t tid) {
  std::string dir = fmt::format("{}/task/{}", ProcPath(process->tracked.pid), tid);
  Thread thread;
  thread.tid = tid;
  ProcFile stat_file(dir + "/stat");
  ProcStat stat;
  if (!stat_file.Read() || !ParseProcStat(stat_file.contents(), &stat)) return false;
  thread.comm = stat.comm;
  // schedstat has ns resolution but reads "0 0 0" on kernels without scheduler statistics.
  ProcFile schedstat(dir + "/schedstat");
  int64_t on_cpu_ns = 0;
  if (schedstat.Read() && ParseSchedstat(schedstat.contents(), &on_cpu_ns) && on_cpu_ns > 0) {
    thread.use_schedstat = true;
    thread.file = std::move(schedstat);
  } else {
    thread.file = std::move(stat_file);
  }
  process->threads.emplace(tid, std::move(thread));
  return true;
}

bool ProcessCollector::SampleThread(Thread* thread) {
  if (!thread->file.Read()) return false;
  int64_t cpu_ns = 0;
  if (thread->use_schedstat) {
    if (!ParseSchedstat(thread->file.contents(), &cpu_ns)) return false;
  } else {
    ProcStat stat;
    if (!ParseProcStat(thread->file.contents(), &stat)) return false;
    cpu_ns = (stat.utime_ticks + stat.stime_ticks) * NsPerTick();
  }
  bool unchanged = thread->fresh_once && cpu_ns == thread->cpu_ns;
  thread->unchanged_samples = unchanged ? thread->unchanged_samples + 1 : 0;
  thread->cpu_ns = cpu_ns;
  thread->fresh = thread->fresh_once = true;
  return true;
}

void ProcessCollector::ReleaseProcess(const Process& process) {
  to_release_.push_back(process.cpu_id);
  to_release_.push_back(process.rss_id);
  for (const auto& [tid, thread] : process.threads) to_release_.push_back(thread.id);
}

void ProcessCollector::Emit(MetricSink& sink) {
  for (SeriesId id : to_release_) {
    if (id != kNoSeries) sink.Release(id);
  }
  to_release_.clear();
  for (auto& [pid, process] : processes_) {
    if (process.cpu_id == kNoSeries) {
      process.cpu_id = sink.Register({"proc.cpu_ns", SeriesKind::kCounter, "ns", pid, -1, "", "", 0});
      process.rss_id = sink.Register({"proc.rss_bytes", SeriesKind::kGauge, "bytes", pid, -1, "", "", 0});
    }
    if (process.fresh) {
      sink.Record(process.cpu_id, last_now_ns_, process.cpu_ns);
      sink.Record(process.rss_id, last_now_ns_, process.rss_bytes);
    }
    for (auto& [tid, thread] : process.threads) {
      if (!thread.fresh) continue;
      if (thread.id == kNoSeries) {
        thread.id =
            sink.Register({"thread.cpu_ns", SeriesKind::kCounter, "ns", pid, tid, "", thread.comm, 1'000'000'000});
      }
      sink.Record(thread.id, last_now_ns_, thread.cpu_ns);
    }
  }
}

}  // namespace eroica::agent
