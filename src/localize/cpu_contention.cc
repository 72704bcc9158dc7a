#include "localize/cpu_contention.h"

#include <fmt/core.h>

#include <algorithm>
#include <cstdint>
#include <unordered_map>
#include <vector>

#include "base/robust_stats.h"
#include "localize/function_leads.h"
#include "localize/group_members.h"
#include "localize/node_cores.h"
#include "localize/own_code_line.h"
#include "summary/function_name.h"

namespace eroica {

bool LoaderWorkersRead(const CpuShare& cpu) {
  return cpu.loader_cpu > 0 || cpu.loader_run_delay > 0 || cpu.loader_making >= 0 || cpu.loader_asleep >= 0;
}

bool HeldBackByQuota(const std::optional<CpuShare>& cpu, const Expectations& e) {
  return cpu && cpu->throttled >= e.min_excess_beta;
}

std::optional<GroupCpu> ReadGroupCpu(const WorkerGroup& group) {
  std::vector<double> idle, delay, loader_cpu, loader_queued, loader_asleep, loader_making;
  for (size_t k = 0; k < group.size(); ++k) {
    const std::optional<CpuShare>& cpu = group.row(k).cpu;
    if (!cpu) continue;
    idle.push_back(1.0 - static_cast<double>(cpu->host_busy));
    delay.push_back(cpu->run_delay);
    if (LoaderWorkersRead(*cpu)) {
      loader_cpu.push_back(cpu->loader_cpu);
      loader_queued.push_back(cpu->loader_run_delay);
      if (cpu->loader_asleep >= 0) loader_asleep.push_back(cpu->loader_asleep);
      if (cpu->loader_making >= 0) loader_making.push_back(cpu->loader_making);
    }
  }
  if (2 * idle.size() <= group.size()) return std::nullopt;
  GroupCpu out;
  out.idle_share = MedianInPlace(idle);
  out.run_delay = MedianInPlace(delay);
  out.with_loader = loader_cpu.size();
  if (!loader_cpu.empty()) {
    out.loader_cpu = MedianInPlace(loader_cpu);
    out.loader_queued = MedianInPlace(loader_queued);
    if (2 * loader_asleep.size() > loader_cpu.size()) out.loader_asleep = MedianInPlace(loader_asleep);
    if (2 * loader_making.size() > loader_cpu.size()) out.loader_making = MedianInPlace(loader_making);
  }
  return out;
}

std::string CpuExplainsCommunication(const WorkerGroup& group, double level) {
  for (size_t k = 0; k < group.size(); ++k) {
    const WorkerRow& row = group.row(k);
    if (row.cpu && row.cpu->throttled >= level) {
      return fmt::format(
          "collectives took β {:.2f} of each step even on the least-waiting rank, but rank {}'s CPU quota held it "
          "back {:.2f} of the window (its cgroup's cpu.stat): while throttled its collective threads stall too, so "
          "every rank waits for it, itself included; not the network",
          level, row.rank, row.cpu->throttled);
    }
  }
  std::optional<GroupCpu> cpu = ReadGroupCpu(group);
  if (!cpu || cpu->idle_share >= 0.5 * level) return "";
  const WorkerRow* most_queued = nullptr;
  for (size_t k = 0; k < group.size(); ++k) {
    const WorkerRow& row = group.row(k);
    if (row.cpu && (most_queued == nullptr || row.cpu->run_delay > most_queued->cpu->run_delay)) most_queued = &row;
  }
  if (most_queued == nullptr || most_queued->cpu->run_delay < level) return "";
  return fmt::format(
      "collectives took β {:.2f} of each step even on the least-waiting rank, but the nodes' cores were busy "
      "{:.0f}% of the window (a slow network would have left them idle about as long) and rank {}'s training "
      "process had threads queued for a CPU {:.2f} s per second (the median rank's {:.2f}), longer than that: a "
      "rank waits at a collective for its slowest peer, so the ranks waited for descheduled peers, not for the "
      "network (more runnable threads than cores)",
      level, 100.0 * (1.0 - cpu->idle_share), most_queued->rank, most_queued->cpu->run_delay, cpu->run_delay);
}

std::string SharedBusyCores(const WorkerGroup& group) {
  constexpr double kQueuedPerSecond = 0.25;
  std::optional<GroupCpu> cpu = ReadGroupCpu(group);
  if (!cpu || 1.0 - cpu->idle_share < kBusyCoresShare || cpu->run_delay < kQueuedPerSecond) return "";
  return fmt::format(
      "the ranks share cores that were busy {:.0f}% of the window, each process queued for a CPU "
      "{:.2f} s per second",
      100.0 * (1.0 - cpu->idle_share), cpu->run_delay);
}

// Whether DataLoader workers that spent `making` thread-seconds per second making batches had
// them ready while training waited `waited` of its steps for them: while training waits for a
// batch still being made, a worker is making it, so where the workers made batches for less than
// half as long, most of the wait was the hand-over. Less than the whole wait is not enough: the
// share is read from stack samples, which leave out a worker descheduled for longer than a few
// periods. Over 374 saved testbed runs and 43 sessions this excused two healthy ranks (workers
// making batches 0.05 and 0.00 s per second against waits of 0.20 and 0.34 of a step), and two
// ranks whose workers read every sample from disk (slow_storage, 4-rank transformers: 0.20
// against waits of 0.22 and 0.24), which the whole wait had excused.
namespace {
bool BatchesReadyForMostOfTheWait(double making, double waited) { return making >= 0 && making < waited / 2; }
}  // namespace

std::string CpuExplainsDataloader(const WorkerGroup& group, double level) {
  std::optional<GroupCpu> cpu = ReadGroupCpu(group);
  if (!cpu || 2 * cpu->with_loader <= group.size()) return "";
  if (BatchesReadyForMostOfTheWait(cpu->loader_making, level)) {
    return fmt::format(
        "training waited β {:.2f} of each step for its DataLoader workers, but they spent only {:.2f} s per second "
        "making batches (median over ranks; their samples, the rest waiting for work): the batches were ready, and "
        "the wait was in the training processes (their hand-over), not in the workers' storage, transforms or collate",
        level, cpu->loader_making);
  }
  if (cpu->loader_queued < level || cpu->loader_asleep > cpu->loader_queued) return "";
  std::string slept = cpu->loader_asleep >= 0
                          ? fmt::format(", and slept making batches only {:.2f} s per second", cpu->loader_asleep)
                          : "";
  return fmt::format(
      "training waited β {:.2f} of each step for its DataLoader workers, but those workers were queued for a CPU "
      "{:.2f} s per second (they ran {:.2f} cores' worth{}) on nodes {:.0f}% busy: the input pipeline was starved of "
      "processors, not slow by itself",
      level, cpu->loader_queued, cpu->loader_cpu, slept, 100.0 * (1.0 - cpu->idle_share));
}

namespace {

bool OwnWork(FindingCategory c) {
  return c == FindingCategory::kCompute || c == FindingCategory::kHost || c == FindingCategory::kDataloader ||
         c == FindingCategory::kMemory;
}

// The training thread's share of the window spent neither on a CPU, nor queued, nor in the
// collectives the trace shows it exposed to: sleeping in I/O, a sleep, a lock, the loader.
double SleptOutsideCollectives(const WorkerRow& row) {
  return 1.0 - row.cpu->main_cpu - row.cpu->main_run_delay - row.beta(Category::kCommunication);
}

bool HasTrainingThread(const WorkerRow& row) {
  return row.cpu && row.cpu->main_run_delay >= 0 && row.cpu->main_cpu >= 0;
}

// The training threads' readings of a group, with each one's peers' medians (one sort each).
// With the process's other threads (gloo's, a sampler, a loader's hand-over): the time they were
// queued, the cores they ran, and the whole process's queueing.
struct TrainingThreads {
  std::vector<size_t> index;  // per member: its slot below, or SIZE_MAX without a reading
  std::vector<double> queued, slept, peers_queued, peers_slept;
  std::vector<double> others_queued, others_cpu, process_queued;
  std::vector<double> peers_others_queued, peers_others_cpu, peers_process_queued;
  bool processes_read = true;  // every member's process reading (a running process used a CPU)
};

TrainingThreads ReadTrainingThreads(const WorkerGroup& group) {
  TrainingThreads t;
  t.index.assign(group.size(), SIZE_MAX);
  for (size_t k = 0; k < group.size(); ++k) {
    if (!HasTrainingThread(group.row(k))) continue;
    const CpuShare& cpu = *group.row(k).cpu;
    t.index[k] = t.queued.size();
    t.queued.push_back(cpu.main_run_delay);
    t.slept.push_back(SleptOutsideCollectives(group.row(k)));
    t.others_queued.push_back(std::max(0.0, static_cast<double>(cpu.run_delay) - cpu.main_run_delay));
    t.others_cpu.push_back(std::max(0.0, static_cast<double>(cpu.process_cpu) - cpu.main_cpu));
    t.process_queued.push_back(std::max(cpu.run_delay, cpu.main_run_delay));
    if (cpu.process_cpu <= 0) t.processes_read = false;
  }
  t.peers_queued = MedianOfOthers(t.queued);
  t.peers_slept = MedianOfOthers(t.slept);
  t.peers_others_queued = MedianOfOthers(t.others_queued);
  t.peers_others_cpu = MedianOfOthers(t.others_cpu);
  t.peers_process_queued = MedianOfOthers(t.process_queued);
  return t;
}

// Member k's cores (`cores`, negative: not read) beyond its peers' median by a straggler's floor
// and by the outlier test the peers' functions are held to: the peers' median, or a negative value
// when it is not such an outlier.
double CoresBeyondPeers(const WorkerGroup& group, const std::vector<double>& cores, size_t k, const Expectations& e) {
  if (cores[k] < 0) return -1.0;
  std::vector<double> peers;
  for (size_t p = 0; p < group.size(); ++p) {
    if (p != k && cores[p] >= 0) peers.push_back(cores[p]);
  }
  if (peers.empty()) return -1.0;
  RobustCenter center = MedianAndMad(peers);
  bool out = cores[k] - center.median >= StragglerFloor(group, e) &&
             RobustZ(cores[k], center, e.min_scale_beta) >= e.outlier_z;
  return out ? center.median : -1.0;
}

// Member k's function of `category` with the largest β, never a folded tail ("(other ...)": many
// functions, not one), or nullptr.
const FunctionEntry* LargestFunction(const WorkerGroup& group, size_t k, Category category) {
  const FunctionEntry* top = nullptr;
  for (const FunctionEntry& entry : group.functions(k)) {
    if (entry.category == category && !IsFoldedTail(group.table->name(entry.name)) &&
        (top == nullptr || entry.beta > top->beta)) {
      top = &entry;
    }
  }
  return top;
}

// The cores of `member`'s node that processes outside its job kept busy over the window
// (node_cores.h); nullopt where the node or one of its ranks was not read.
std::optional<double> CoresBusyOutsideTheJob(const WorkerGroup& group, size_t member) {
  std::optional<NodeCores> node = ReadNodeCores(*group.table, group.row(member).host);
  if (!node) return std::nullopt;
  return node->outside();
}

// Why `member`'s own-work excess (share of its step) in `category` is the scheduler's, or "". Time
// its training thread spent queued for a CPU beyond its peers' is time its ops and Python took
// longer; the excess that queueing leaves must still make a straggler on its own. Host and loader
// time can also be sleep (slow storage queues at every wake-up too), so there the rank must not
// have slept longer outside collectives; ops run or queue, and that sleep estimate counts the
// straggler's shorter wait in collectives as sleep, so it is not asked of compute.
std::string ScheduledOut(const WorkerGroup& group, const TrainingThreads& t, size_t member, FindingCategory category,
                         double excess, const Expectations& e) {
  const WorkerRow& mine = group.row(member);
  size_t slot = t.index[member];
  // Most peers must have been read too: a median of a few says little.
  if (slot == SIZE_MAX || mine.cpu->throttled < 0 || excess <= 0 || 2 * (t.queued.size() - 1) < group.size() - 1 ||
      t.queued.size() < 2) {
    return "";
  }
  double queued = t.peers_queued[slot];
  double extra = t.queued[slot] - queued;
  double slept = t.slept[slot] - t.peers_slept[slot];
  double floor = StragglerFloor(group, e);
  bool may_sleep = category == FindingCategory::kHost || category == FindingCategory::kDataloader;
  // Sleep that is a hand-over to its own queued threads: the training thread waits on the
  // interpreter lock a thread of its process holds (a sampler, a hook) and on the threads that
  // complete its collectives; where those sat in the run queue beyond
  // their peers' (and ran no more than theirs: busy threads are BlameBusyThreadsOfItsProcess's),
  // it slept for the scheduler. val30 s5030, a healthy 4-rank transformer with 2 loader workers and
  // 3 micro-batches (12 processes on 2 cores): rank 3 last at every collective, own work +0.25 of a
  // step; its training thread queued +0.17, ran +0.04 and slept +0.12 beyond its peers', while its
  // other threads queued +0.26 (0.70 s per second against 0.23-0.50) and ran +0.02 cores: named
  // `local host` at "(resuming after allreduce)" with nothing wrong.
  double others_extra = t.others_queued[slot] - t.peers_others_queued[slot];
  bool others_idle = t.others_cpu[slot] - t.peers_others_cpu[slot] < floor;
  // Host time only: a wait for loader workers is a hand-over from other processes, read as theirs
  // (LoaderWorkersScheduledOut, BatchesWereReady).
  bool hands_over = category == FindingCategory::kHost && others_idle && t.processes_read;
  double handover = hands_over ? std::clamp(std::min(slept, others_extra), 0.0, 1.0) : 0.0;
  double explained = std::min(extra + handover, excess);
  double left = excess - explained;
  if (HeldBackByQuota(mine, e) || extra <= 0 || (may_sleep && slept - handover >= e.min_excess_beta) || left >= floor) {
    return "";
  }
  // Who queued it: its own job where its peers queued as long (its threads, where the hand-over
  // counts), or where processes outside the job used fewer cores of its node than the time it
  // queued beyond them (a second of theirs on a CPU keeps others off it a second at most).
  // probe27's 3-rank transformer on 2 cores, every rank in a Python loop (s615): rank 1 queued
  // 0.32 s per second against 0.11-0.12, the ranks used 1.69 of the node's 1.72 busy cores.
  double peers_queued = handover > 0 ? t.peers_process_queued[slot] : queued;
  std::optional<double> outside = CoresBusyOutsideTheJob(group, member);
  bool own_job = peers_queued >= explained || (outside && *outside < explained);
  if (!own_job) return "";
  std::string whose =
      peers_queued >= explained
          ? fmt::format("where each of theirs queued {:.2f} too", peers_queued)
          : fmt::format("while processes outside the job kept only {:.2f} of its node's cores busy", *outside);
  std::string asleep =
      !may_sleep ? std::string("its excess is in its ops, which run or queue")
      : handover > 0
          ? fmt::format(
                "it slept {:+.2f} outside collectives while its process's other threads, no busier than theirs "
                "({:+.2f} cores), were queued {:+.2f} s per second (the lock and the collectives' completions it waits "
                "on)",
                slept, t.others_cpu[slot] - t.peers_others_cpu[slot], others_extra)
          : fmt::format("it slept no longer outside collectives ({:+.2f})", slept);
  return fmt::format(
      "rank {}'s own work was {:.2f} of a step above its peers', but its training thread was queued for a CPU {:.2f} "
      "of the window longer than theirs, {}, {}, and no CPU quota held it ({:.2f}); what the queueing leaves ({:.2f}) "
      "is below a straggler's {:.2f}: the job has more runnable threads than cores, and this window the scheduler "
      "gave rank {} less; no finding",
      mine.rank, excess, extra, whose, asleep, mine.cpu->throttled, left, floor, mine.rank);
}

// Why `member`'s wait for its DataLoader workers (`excess`, share of its step) is the scheduler's,
// or "": its workers were queued for a CPU longer than its peers' workers, by as much as the
// excess, while those were queued too (the node had more runnable threads than cores). The
// group-wide twin is CpuExplainsDataloader. Loader workers that are slow by themselves sleep in
// their reads or transforms and queue no more than their peers': on the four splits here the
// ranks with slow workers had them queued 0.05-0.60 s per second, at most 0.31 above their peers'
// (readings over the traced steps only); a healthy rank whose workers were queued 0.92 against
// 0.36-0.47 waited 0.22 of a step (probe12, read with the profiler's stop). Those were the worker
// processes' readings, their sampler threads' queueing counted in: read by the batch-making thread
// alone, fresh runs' slow workers (4-8 ranks on 2 cores) queued 0.03-0.18 s per second and slept
// making batches 1.76-1.93 (two workers each), healthy workers slept none. Workers that slept
// making batches longer than their peers', by more than they were queued beyond theirs, are slow
// by themselves and queued besides, as any busy thread on busy cores is.
std::string LoaderWorkersScheduledOut(const WorkerGroup& group, size_t member, double excess, const Expectations& e) {
  const std::optional<CpuShare>& mine = group.row(member).cpu;
  if (!mine || mine->loader_run_delay <= 0 || HeldBackByQuota(group.row(member), e) || excess <= 0) return "";
  std::vector<double> peers, peers_asleep;
  for (size_t k = 0; k < group.size(); ++k) {
    const std::optional<CpuShare>& cpu = group.row(k).cpu;
    if (k != member && cpu && LoaderWorkersRead(*cpu)) {
      peers.push_back(cpu->loader_run_delay);
      if (cpu->loader_asleep >= 0) peers_asleep.push_back(cpu->loader_asleep);
    }
  }
  if (peers.empty() || 2 * peers.size() < group.size() - 1) return "";
  double queued = MedianInPlace(peers);
  double extra = mine->loader_run_delay - queued;
  if (mine->loader_asleep >= 0 && 2 * peers_asleep.size() > peers.size() &&
      mine->loader_asleep - MedianInPlace(peers_asleep) >= extra) {
    return "";
  }
  double explained = std::min(extra, excess);
  double left = excess - explained;
  double floor = StragglerFloor(group, e);
  if (extra <= 0 || queued < explained || left >= floor) return "";
  return fmt::format(
      "rank {}'s own work was {:.2f} of a step above its peers', waiting for its DataLoader workers, but those "
      "were queued for a CPU {:.2f} s per second longer than its peers' workers, where theirs queued {:.2f} too, and "
      "no CPU quota held it; what the queueing leaves ({:.2f}) is below a straggler's {:.2f}: its input pipeline was "
      "starved of processors this window, not slow by itself; no finding",
      group.row(member).rank, excess, extra, queued, left, floor);
}

// Why `member`'s wait for its DataLoader workers is not theirs, or "": workers that made batches
// for less than half as long (thread-seconds per second, summed) as the rank waited had them
// ready (BatchesReadyForMostOfTheWait). Healthy ranks' workers (2 per rank, 2-8 ranks on 2
// cores) made batches 0.00-0.08 s per second, workers that slept in every sample 0.99-1.00 each.
// A sampler slow by itself runs in the training process and idles the workers too: it is
// excused with them (none was seen here).
std::string BatchesWereReady(const WorkerGroup& group, size_t member) {
  const WorkerRow& row = group.row(member);
  if (!row.cpu) return "";
  double waited = row.beta(Category::kDataloader);
  if (!BatchesReadyForMostOfTheWait(row.cpu->loader_making, waited)) return "";
  return fmt::format(
      "rank {} waited {:.2f} of its step for its DataLoader workers, but they spent only {:.2f} s per second making "
      "batches (their samples, the rest waiting for work): the batches were ready, and the wait was in the training "
      "process (their hand-over), not in its workers' storage, transforms or collate; no finding",
      row.rank, waited, row.cpu->loader_making);
}

// Why `member`'s compute excess is not a slower device, or "" (SharesPeersProcessors).
std::string SameProcessorsAsPeers(const WorkerGroup& group, size_t member, double excess, const Expectations& e) {
  std::optional<double> peers_cpu = SharesPeersProcessors(group, member, e);
  if (!peers_cpu || excess <= 0) return "";
  const WorkerRow& mine = group.row(member);
  return fmt::format(
      "rank {}'s ops took {:.2f} of a step longer than its peers', but on CPU training every rank of this group runs "
      "on host {}'s processors, no CPU quota held it ({:.2f}), and its training thread had a CPU at least as long as "
      "theirs ({:.2f} of the window against {:.2f}): the same processors are not slower for one rank; the ranks' "
      "contention for the host's shared caches and memory moves between them; no finding",
      mine.rank, excess, group.table->name(mine.host), mine.cpu->throttled, mine.cpu->main_cpu, *peers_cpu);
}

std::string QuotaAction(int rank) {
  return fmt::format(
      "Rank {} is held back by its own CPU limit: raise or remove its quota (cgroup cpu.max, Kubernetes "
      "resources.limits.cpu) or give it fewer threads.",
      rank);
}

}  // namespace

std::optional<double> SharesPeersProcessors(const WorkerGroup& group, size_t member, const Expectations& e) {
  const WorkerRow& mine = group.row(member);
  if (mine.has_device || mine.host == Interner::kEmpty || !HasTrainingThread(mine) || mine.cpu->throttled < 0 ||
      HeldBackByQuota(mine, e)) {
    return std::nullopt;
  }
  std::vector<double> peers_cpu;
  for (size_t k = 0; k < group.size(); ++k) {
    const WorkerRow& peer = group.row(k);
    if (peer.host != mine.host) return std::nullopt;
    if (k != member && HasTrainingThread(peer)) peers_cpu.push_back(peer.cpu->main_cpu);
  }
  // Most peers must have been read too: a median of a few says little.
  if (peers_cpu.empty() || 2 * peers_cpu.size() < group.size() - 1) return std::nullopt;
  double peers_median = MedianInPlace(peers_cpu);
  if (mine.cpu->main_cpu < peers_median) return std::nullopt;
  return peers_median;
}

std::vector<std::optional<double>> SleptBeyondPeers(const WorkerGroup& group) {
  std::vector<std::optional<double>> out(group.size());
  TrainingThreads t = ReadTrainingThreads(group);
  // Most peers must have been read too: a median of a few says little.
  if (t.slept.size() < 2 || 2 * (t.slept.size() - 1) < group.size() - 1) return out;
  for (size_t k = 0; k < group.size(); ++k) {
    size_t slot = t.index[k];
    if (slot != SIZE_MAX) out[k] = t.slept[slot] - t.peers_slept[slot];
  }
  return out;
}

std::vector<std::optional<double>> LoaderSleptBeyondPeers(const WorkerGroup& group) {
  std::vector<std::optional<double>> out(group.size());
  std::vector<size_t> index(group.size(), SIZE_MAX);
  std::vector<double> asleep;
  for (size_t k = 0; k < group.size(); ++k) {
    const std::optional<CpuShare>& cpu = group.row(k).cpu;
    if (!cpu || cpu->loader_asleep < 0) continue;
    index[k] = asleep.size();
    asleep.push_back(cpu->loader_asleep);
  }
  if (asleep.size() < 2 || 2 * (asleep.size() - 1) < group.size() - 1) return out;
  std::vector<double> peers = MedianOfOthers(asleep);
  for (size_t k = 0; k < group.size(); ++k) {
    if (index[k] != SIZE_MAX) out[k] = asleep[index[k]] - peers[index[k]];
  }
  return out;
}

std::vector<std::optional<double>> OnCpuBeyondPeers(const WorkerGroup& group) {
  std::vector<std::optional<double>> out(group.size());
  std::vector<size_t> read;
  std::vector<double> on_cpu;
  for (size_t k = 0; k < group.size(); ++k) {
    const std::optional<CpuShare>& cpu = group.row(k).cpu;
    if (cpu && cpu->main_cpu >= 0) on_cpu.push_back(cpu->main_cpu), read.push_back(k);
  }
  if (2 * read.size() <= group.size()) return out;  // most ranks read: a median of a few says little
  std::vector<double> peers = MedianOfOthers(on_cpu);
  for (size_t i = 0; i < read.size(); ++i) out[read[i]] = on_cpu[i] - peers[i];
  return out;
}

void AddQuotaThrottled(const WorkerGroup& group, const Expectations& e, std::vector<Finding>* local) {
  size_t n = group.size();
  if (n < 2) return;
  std::vector<double> throttled(n), own_work(n);
  bool any = false;
  for (size_t k = 0; k < n; ++k) {
    const std::optional<CpuShare>& cpu = group.row(k).cpu;
    throttled[k] = cpu && cpu->throttled > 0 ? cpu->throttled : 0.0;
    own_work[k] = 1.0 - group.row(k).beta(Category::kCommunication);
    any = any || HeldBackByQuota(group.row(k), e);
  }
  if (!any) return;
  std::vector<double> peers_throttled = MedianOfOthers(throttled);
  std::vector<double> peers_work = MedianOfOthers(own_work);
  std::unordered_map<int, Finding*> by_rank;
  for (Finding& f : *local) {
    if (f.workers.size() == 1) by_rank.emplace(f.workers[0], &f);
  }
  double iteration_s = MedianIterationS(group);
  std::vector<double> leads = HostFunctionLeads(group);
  for (size_t k = 0; k < n; ++k) {
    double quota_excess = throttled[k] - peers_throttled[k];
    double work_excess = own_work[k] - peers_work[k];
    // When a later rank makes everyone wait, the quota's cost hides in that wait this window
    // (its own work may even look short: it is measured beside the later rank's) and shows
    // once that rank is fixed; the limit is there all the same.
    if (!HeldBackByQuota(group.row(k), e) || quota_excess < e.min_excess_beta) continue;
    int rank = group.row(k).rank;
    std::string figures = fmt::format(
        "its CPU quota held it back {:.2f} of the window (its cgroup's cpu.stat; peers {:.2f}), while its own work "
        "took {:.2f} of a step against its peers' {:.2f}",
        throttled[k], peers_throttled[k], own_work[k], peers_work[k]);
    if (auto it = by_rank.find(rank); it != by_rank.end()) {
      Finding& found = *it->second;
      found.evidence += "; " + figures;
      // A quota freezes the rank wherever it runs out, so its host or loader time is wherever the
      // freezes landed; held back at least that long, the quota explains it. Not where the time
      // sits at one program point far above every peer: there the rank's own code spends it (and
      // runs the quota out besides). cnn18's 4-rank quota run (seed 408): throttled 0.89 of the
      // window, its excess 0.21 of a step in DistributedDataParallel.forward (its peers' 0.05),
      // where the CNN's buffer broadcast waits; it had been named a host finding.
      double excess = iteration_s > 0 ? found.impact_s_per_iter / iteration_s : 0;
      bool freezes_land_there = found.category == FindingCategory::kDataloader ||
                                (found.category == FindingCategory::kHost && leads[k] < e.point_lead_beta);
      if (freezes_land_there && quota_excess >= excess) {
        found.category = FindingCategory::kCompute;
        found.evidence += ": the quota's freezes, not its code";
        found.action = QuotaAction(rank);
      }
      continue;
    }
    Finding f;
    f.scope = FindingScope::kLocal;
    f.category = FindingCategory::kCompute;
    f.workers = {rank};
    if (const FunctionEntry* top = LargestFunction(group, k, Category::kCompute); top != nullptr) {
      f.function = std::string(group.table->name(top->name));
      f.beta = top->beta;
    }
    f.impact_s_per_iter = std::max(0.0, work_excess) * iteration_s;
    f.evidence = fmt::format("rank {}: {}", rank, figures);
    if (work_excess < e.min_excess_beta) {
      // No later rank need be named: on cores every rank shares, a 6-rank forecaster's rank under
      // a 30 % quota got the 0.27 of a core each of its peers got (its quota barely bound).
      f.evidence +=
          "; its own work is no longer than its peers' this window (its quota's cost hides in what every rank "
          "waits for: a later rank, or cores they all share), so it costs little now; the limit is there all the "
          "same";
    }
    f.action = QuotaAction(rank);
    local->push_back(std::move(f));
  }
}

namespace {

std::string BusyThreadsEvidence(double mine, double peers, double main_cpu) {
  return fmt::format(
      "its training process's other threads ran on a CPU {:.2f} cores against its peers' {:.2f} ({:+.2f}), "
      "while its training thread ran {:.2f}: threads beside the training loop took its step (a Python thread "
      "holds the interpreter lock the training thread needs at every op and batch hand-over; native threads take "
      "its cores)",
      mine, peers, mine - peers, main_cpu);
}

std::string BusyThreadsAction(int rank) {
  return fmt::format(
      "Find the busy thread in rank {}'s training process (py-spy dump --pid PID, or "
      "faulthandler.dump_traceback(all_threads=True)) and move its work out of the process or off the "
      "interpreter lock.",
      rank);
}

// The busy threads' code where the sampler saw them run the job's own (a Python thread's; native
// threads, gloo's or a library's, run none): at their hottest frame over the window, since no line
// of the training thread's is the cause.
void NameBusyThreadsCode(const WorkerRow& row, const WorkerTable& table, Finding* f) {
  f->action = BusyThreadsAction(row.rank);
  if (row.other_thread_frame == Interner::kEmpty) return;
  f->location = std::string(table.name(row.other_thread_frame));
  f->evidence +=
      fmt::format(". Its other Python threads' stack samples put {:.0f}% of their running time in the job's code at {}",
                  100.0 * row.other_thread_share, f->location);
  f->action = fmt::format(
      "Rank {}'s training process runs a busy thread beside its loop, at {}: move that work out of the process "
      "(a subprocess, or less often) or off the interpreter lock.",
      row.rank, f->location);
}

}  // namespace

void BlameBusyThreadsOfItsProcess(const WorkerGroup& group, const Expectations& e, std::vector<Finding>* local) {
  double iteration_s = MedianIterationS(group);
  if (iteration_s <= 0) return;
  // Cores its process's threads other than the training thread ran, per member (-1: not read).
  std::vector<double> others(group.size(), -1.0);
  size_t read = 0;
  for (size_t k = 0; k < group.size(); ++k) {
    const WorkerRow& row = group.row(k);
    if (!HasTrainingThread(row) || row.cpu->process_cpu < row.cpu->main_cpu) continue;
    others[k] = static_cast<double>(row.cpu->process_cpu) - static_cast<double>(row.cpu->main_cpu);
    ++read;
  }
  // Most members must have been read: a median of a few says little.
  if (read < 3 || 2 * read <= group.size()) return;
  // Beyond the spread its peers' other threads have among themselves (gloo's threads, a sampler:
  // healthy runs' ranks differed by up to 0.13 cores). CPU training only: a GPU rank's process
  // has the CUDA runtime's and NCCL's threads beside the training loop, whose CPU no run here has
  // measured.
  auto outlier = [&](size_t k) {
    if (group.row(k).has_device || HeldBackByQuota(group.row(k), e)) return -1.0;
    return CoresBeyondPeers(group, others, k, e);
  };
  std::unordered_map<int, size_t> member_of = MembersByRank(group);
  std::vector<bool> named = NamedAlone(group, *local);
  std::string shared = SharedBusyCores(group);
  for (Finding& f : *local) {
    std::optional<size_t> member = MemberNamedAlone(member_of, f);
    if (!member || !OwnWork(f.category)) continue;
    size_t k = *member;
    double peers = outlier(k);
    // ... and by half the lateness to explain. Of the 113 other local findings on own work of the
    // 27- and 28-series' saved runs, one rank's other threads were such an outlier (a 3-rank GC
    // storm's: +0.086 cores, z 8.6) and one reached half its excess (slow storage, s608: +0.115,
    // 0.51 of it, z 3.1); the rest 0.17 of it at most. The busy_thread runs: +0.50-0.77, z 50-77.
    if (peers < 0 || others[k] - peers < 0.5 * f.impact_s_per_iter / iteration_s) continue;
    f.category = FindingCategory::kHost;
    f.function = std::string(kOtherThreadsOfTheProcess);
    f.beta = others[k];
    f.peer_beta = peers;
    f.location.clear();
    f.evidence += "; " + BusyThreadsEvidence(others[k], peers, group.row(k).cpu->main_cpu);
    // On cores the ranks share busy, the cores the threads took are every rank's too, not only
    // its own step's: what they cost is the larger of its lateness and that share of the node's
    // cores (as below, where no rank waits for it). An unseen 5-rank graph network whose rank 0 ran
    // a metrics thread (+0.30 of 2 cores) was 34 ms a step late, while every rank's compute grew
    // 103 ms a step against the baseline, which then read as the first cause.
    const WorkerRow& row = group.row(k);
    double taken_s = row.cpu->cpus > 0 ? (others[k] - peers) / row.cpu->cpus * iteration_s : 0.0;
    if (!shared.empty()) f.cores_taken_s_per_iter = taken_s;
    if (!shared.empty() && taken_s > f.impact_s_per_iter) {
      f.impact_s_per_iter = taken_s;
      f.evidence += fmt::format(
          "; on cores the ranks share ({}) they took {:.2f} of the node's {:.0f} cores from every "
          "rank's work, {:.1f} ms a step",
          shared, others[k] - peers, row.cpu->cpus, 1e3 * taken_s);
    }
    NameBusyThreadsCode(row, *group.table, &f);
  }
  // No straggler, on CPU training with cores the ranks share busy: the threads take the cores
  // every rank runs on, which slows them all alike. Named where they ran longer than the training
  // thread itself: a training process whose work beside the loop outweighs the loop is doing
  // something else (healthy ranks' other threads: 0.05-0.24 cores, 0.10-0.86 of their training
  // thread's time on the 207 healthy ranks of the 27- and 28-series). What they cost is the share
  // of the node's cores they took.
  if (shared.empty()) return;
  for (size_t k = 0; k < group.size(); ++k) {
    const WorkerRow& row = group.row(k);
    if (others[k] < 0 || named[k] || row.cpu->cpus <= 0 || others[k] < row.cpu->main_cpu) continue;
    double peers = outlier(k);
    if (peers < 0) continue;
    double share = (others[k] - peers) / row.cpu->cpus;
    if (share < e.min_excess_beta) continue;
    Finding f;
    f.scope = FindingScope::kLocal;
    f.category = FindingCategory::kHost;
    f.workers = {row.rank};
    f.function = std::string(kOtherThreadsOfTheProcess);
    f.beta = others[k];
    f.peer_beta = peers;
    f.impact_s_per_iter = share * iteration_s;
    f.cores_taken_s_per_iter = share * iteration_s;
    f.evidence = fmt::format("rank {}: ", row.rank) + BusyThreadsEvidence(others[k], peers, row.cpu->main_cpu) +
                 fmt::format(
                     "; no rank waits for it, but on cores the ranks share ({}) they took {:.2f} of the node's "
                     "{:.0f} cores from every rank's work",
                     shared, others[k] - peers, row.cpu->cpus);
    NameBusyThreadsCode(row, *group.table, &f);
    local->push_back(std::move(f));
  }
}

namespace {

std::string BusyLoaderWorkersEvidence(const WorkerRow& row, double workers, double peers, const std::string& shared) {
  return fmt::format(
      "its DataLoader worker processes ran on a CPU {:.2f} cores against its peers' workers' {:.2f} ({:+.2f}), while "
      "it waited β {:.2f} of its step for them: they keep up by taking cores, and {}: they took {:.2f} of the node's "
      "{:.0f} cores from every rank's work",
      workers, peers, workers - peers, row.beta(Category::kDataloader), shared, workers - peers, row.cpu->cpus);
}

// Makes `f` the busy loader workers' finding of member k: named at its loader's op (the function
// its training thread takes their batches in), located where the workers' own CPU went.
void NameBusyLoaderWorkers(const WorkerGroup& group, size_t k, double workers, double peers, Finding* f) {
  const WorkerRow& row = group.row(k);
  const FunctionEntry* loader = LargestFunction(group, k, Category::kDataloader);
  f->category = FindingCategory::kDataloader;
  f->function = loader != nullptr ? std::string(group.table->name(loader->name)) : std::string(kLoaderWorkerProcesses);
  f->beta = workers;
  f->peer_beta = peers;
  f->location.clear();
  // Where their CPU went: the workers' own top frame over the window, not the few moments the
  // training thread waited for them (what LocateFindings would give the loader's op).
  if (row.loader_worker_frame != Interner::kEmpty) {
    f->location = std::string(group.table->name(row.loader_worker_frame));
    f->evidence += fmt::format(". Its workers' Python stack samples put {:.0f}% of their time in the job's code at {}.",
                               100.0 * row.loader_worker_share, f->location);
  }
  f->action = fmt::format(
      "Rank {}'s DataLoader workers do more per sample than its peers' (decoding, transforms, tokenizing): find "
      "their hot code (py-spy dump --pid of a worker), then cache, precompute or cheapen it, or balance what each "
      "rank reads.",
      row.rank);
}

}  // namespace

void BlameBusyLoaderWorkers(const WorkerGroup& group, const Expectations& e, std::vector<Finding>* local) {
  double iteration_s = MedianIterationS(group);
  if (iteration_s <= 0) return;
  std::string shared = SharedBusyCores(group);
  if (shared.empty()) return;
  // Cores each member's loader workers ran (-1: not read, or it loads in its training process).
  std::vector<double> workers(group.size(), -1.0);
  size_t read = 0;
  for (size_t k = 0; k < group.size(); ++k) {
    const WorkerRow& row = group.row(k);
    if (!row.cpu || !LoaderWorkersRead(*row.cpu) || row.cpu->loader_cpu < 0) continue;
    workers[k] = row.cpu->loader_cpu;
    ++read;
  }
  if (read < 3 || 2 * read <= group.size()) return;
  auto outlier = [&](size_t k) {
    const WorkerRow& row = group.row(k);
    if (workers[k] < 0 || row.has_device || row.cpu->cpus <= 0 || HeldBackByQuota(row, e)) return -1.0;
    return CoresBeyondPeers(group, workers, k, e);
  };
  // A straggler doing the same work slower (compute) whose own workers are such an outlier, by
  // half the lateness to explain (the bar BlameBusyThreadsOfItsProcess holds a process's other
  // threads to): the workers took the cores its training thread needed, a CPU contention of its
  // own making, not a slower processor. A 3-rank MLP with 2 workers a rank whose rank 1's workers
  // spent 1.5 ms of CPU a sample (testbed loader_workers_busy, seed 9900): its workers 0.70 cores
  // against 0.08, its compute 0.27 of a step against 0.19 (+0.17 of a step in all), its training
  // thread queued 0.18 s a second against 0.08-0.10: `local compute rank 1`. On 379 ranks with
  // workers read, workers ran at most 0.082 cores beyond their peers' but for the busy ones. So
  // is a straggler late to run again after its collectives (host time at a resume point: its
  // thread queued for a CPU): the same scenario in a clean clone of stop 61, rank 2's workers 0.59
  // cores against 0.01-0.02, its thread queued 0.32 s a second, named `local host` at "(resuming
  // after allreduce)" (0.177 of its step).
  // So is one named for more work where its training thread had the CPU a little longer than its
  // peers' but its workers took more beyond theirs than that: the thread's extra time is no more
  // work than its own workers' queueing made (a clean clone of stop 62, the same scenario: rank 2's
  // workers 0.53 cores against 0.02, its thread 0.22 against 0.17-0.19, named `local imbalance`).
  // A rank given more data runs its model on it in the thread: the thread's excess leads there.
  std::unordered_map<int, size_t> member_of = MembersByRank(group);
  const std::vector<std::optional<double>> thread_beyond = OnCpuBeyondPeers(group);
  for (Finding& f : *local) {
    std::optional<size_t> member = MemberNamedAlone(member_of, f);
    const bool queued = f.category == FindingCategory::kHost && IsResumePoint(f.function);
    const bool more_work = f.category == FindingCategory::kImbalance;
    if (!member || (f.category != FindingCategory::kCompute && !queued && !more_work)) continue;
    size_t k = *member;
    double peers = outlier(k);
    if (peers < 0 || workers[k] - peers < 0.5 * f.impact_s_per_iter / iteration_s) continue;
    if (more_work && !(thread_beyond[k] && workers[k] - peers > *thread_beyond[k])) continue;
    f.evidence += "; " + BusyLoaderWorkersEvidence(group.row(k), workers[k], peers, shared) +
                  " (its own training thread's among them)";
    f.cores_taken_s_per_iter = (workers[k] - peers) / group.row(k).cpu->cpus * iteration_s;
    NameBusyLoaderWorkers(group, k, workers[k], peers, &f);
  }
  std::vector<bool> named = NamedAlone(group, *local);
  for (size_t k = 0; k < group.size(); ++k) {
    if (named[k]) continue;
    double peers = outlier(k);
    if (peers < 0) continue;
    const WorkerRow& row = group.row(k);
    double share = (workers[k] - peers) / row.cpu->cpus;
    if (share < e.min_excess_beta) continue;
    Finding f;
    f.scope = FindingScope::kLocal;
    f.workers = {row.rank};
    f.impact_s_per_iter = share * iteration_s;
    f.cores_taken_s_per_iter = share * iteration_s;
    f.evidence = fmt::format("rank {}: ", row.rank) + BusyLoaderWorkersEvidence(row, workers[k], peers, shared);
    NameBusyLoaderWorkers(group, k, workers[k], peers, &f);
    local->push_back(std::move(f));
  }
}

void ExcuseScheduledOut(const WorkerGroup& group, const Expectations& e, std::vector<Finding>* local,
                        std::vector<std::string>* notes) {
  double iteration_s = MedianIterationS(group);
  if (iteration_s <= 0 || local->empty()) return;
  TrainingThreads threads = ReadTrainingThreads(group);
  std::unordered_map<int, size_t> member_of = MembersByRank(group);
  std::erase_if(*local, [&](const Finding& f) {
    std::optional<size_t> member = MemberNamedAlone(member_of, f);
    if (!member || !OwnWork(f.category)) return false;
    // Its own process's threads queue it too: that queueing is theirs (BlameBusyThreadsOfItsProcess).
    if (f.function == kOtherThreadsOfTheProcess) return false;
    double excess = f.impact_s_per_iter / iteration_s;
    // The scheduler stretches the code every rank runs; it does not make one rank run code of its
    // own: host or compute excess under a line only it ran (beyond its queueing) is that code's,
    // however it queued and slept (as KeepThoseTheOthersWaitFor keeps it; not the loader, whose
    // waiting line its peers pass too briefly to be sampled). A 6-rank CNN on 2 cores whose rank 1
    // saved a checkpoint with fsync every step had its thread's +0.09 sleep read as a hand-over to
    // its process's other threads, queued +0.19.
    bool own_work = f.category == FindingCategory::kHost || f.category == FindingCategory::kCompute;
    if (own_work && LineOnlyItRuns(group, *member, excess, e)) return false;
    std::string why = ScheduledOut(group, threads, *member, f.category, excess, e);
    if (why.empty() && f.category == FindingCategory::kDataloader) {
      why = LoaderWorkersScheduledOut(group, *member, excess, e);
      if (why.empty()) why = BatchesWereReady(group, *member);
    }
    if (why.empty() && f.category == FindingCategory::kCompute) why = SameProcessorsAsPeers(group, *member, excess, e);
    if (why.empty()) return false;
    notes->push_back(std::move(why));
    return true;
  });
}

}  // namespace eroica
