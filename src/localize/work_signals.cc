#include "localize/work_signals.h"

#include <fmt/core.h>

#include <cmath>
#include <map>
#include <optional>
#include <string_view>
#include <vector>

#include "base/robust_stats.h"
#include "localize/call_sizes.h"
#include "localize/cpu_contention.h"
#include "localize/group_members.h"
#include "summary/function_name.h"

namespace eroica {
namespace {

// Counts per iteration a worker reports for itself, against the group's median.
struct Signal {
  const char* label;
  float (*read)(const WorkerRow&);
};

constexpr Signal kSignals[] = {
    {"data-loader ops per iteration", [](const WorkerRow& w) { return w.dataloader_ops_per_iter; }},
    {"compute calls per iteration", [](const WorkerRow& w) { return w.compute_calls_per_iter; }},
};

double PeerMedian(const WorkerGroup& group, size_t suspect, const auto& read) {
  std::vector<double> values;
  values.reserve(group.size());
  for (size_t k = 0; k < group.size(); ++k) {
    if (k != suspect) values.push_back(read(k));
  }
  return MedianInPlace(values);
}

// Whether the rank's loader ops in its training process count its items. Loading in the process,
// the dataset's and the collate's ops run there, one set per sample; DataLoader worker processes
// run them, and the training process only takes each batch in, in ops whose count does not grow
// with the batch (a 4-rank transformer given twice the batch with 2 workers a rank: 20 loader ops
// a step on every rank, its compute calls 1.8x, named its own code). Workers show in the CPU
// readings of their processes, or in torch's name for the iterator that feeds from them.
bool LoaderOpsCountItems(const WorkerGroup& group, size_t k) {
  const WorkerRow& w = group.row(k);
  if (w.cpu && LoaderWorkersRead(*w.cpu)) return false;
  for (const FunctionEntry& f : group.functions(k)) {
    if (f.category == Category::kDataloader &&
        group.table->name(f.name).find("_MultiProcessingDataLoaderIter") != std::string_view::npos) {
      return false;
    }
  }
  return true;
}

// Whether the suspect's wait for its loader beyond its peers' was mostly asleep: its training
// thread slept (outside the collectives: SleptBeyondPeers) beyond theirs by at least half that
// wait and by the noise floor. Loading more items is work in the training process, on a CPU or
// queued for one, never asleep: a rank given more data wakes as seldom as its peers, which
// sleep in their collectives waiting for it. Its loader's ops can still outnumber its peers' for
// code of its own around a slow read: an unseen 5-rank LSTM job loading in the training process,
// whose rank 2 slept 3 ms an item in its dataset and read a step counter there with one more
// tensor op an item (64 -> 96 loader ops a step against its peers' 64), waited 0.115 of its
// step for batches beyond its peers and slept 0.09 beyond theirs (its 32 sleeps of 3 ms: 0.091).
bool LoaderWaitAsleep(const WorkerGroup& group, size_t suspect, const Expectations& e) {
  std::optional<double> slept = SleptBeyondPeers(group)[suspect];
  if (!slept) return false;
  double wait = group.row(suspect).beta(Category::kDataloader) -
                PeerMedian(group, suspect, [&](size_t k) { return group.row(k).beta(Category::kDataloader); });
  return wait > 0 && *slept >= std::max(0.5 * wait, e.min_excess_beta);
}

// The majority's shapes for a function differ from the suspect's.
bool ShapesDiffer(const WorkerGroup& group, size_t suspect, std::string* function) {
  const WorkerTable& table = *group.table;
  for (const FunctionEntry& f : group.functions(suspect)) {
    if (f.category != Category::kCompute || f.shapes_hash == 0 || f.beta < 0.01f) continue;
    std::map<uint32_t, size_t> votes;
    for (size_t k = 0; k < group.size(); ++k) {
      const FunctionEntry* g = table.Find(group.members[k], f.name, f.category);
      if (g && g->shapes_hash != 0) ++votes[g->shapes_hash];
    }
    for (auto [hash, count] : votes) {
      if (hash != f.shapes_hash && count * 2 > group.size()) {
        *function = std::string(table.name(f.name));
        return true;
      }
    }
  }
  return false;
}

struct Stretch {
  double batch_ratio = 0;  // the suspect's time in batch-sized ops over its peers' (per iteration)
  double model_ratio = 0;  // the same for model-sized work
  double model_peer_us = 0;
};

// Per-iteration time (calls × mean duration) of the suspect's compute ops and model-sized work,
// against each function's peer median; the model-sized work with the host's time between ops
// (`with_host`) or its ops alone. The host's own time between ops (Python dispatch, the loop's
// bookkeeping: one per op launched, whatever the op's size) scales with the model too, and is
// the larger part on purpose: a CFS quota freezes the process for whole periods, and work of a
// few ms per iteration often sits between two freezes (one 10 % quota run left the gradient and
// optimizer ops alone at 0.83x while its host time was 5.8x).
Stretch CompareStretch(const WorkerGroup& group, size_t suspect, bool with_host) {
  const WorkerTable& table = *group.table;
  double batch_mine = 0, batch_peers = 0, model_mine = 0, model_peers = 0;
  for (const FunctionEntry& f : group.functions(suspect)) {
    std::string_view name = table.name(f.name);
    bool model = ScalesWithTheModel(name, f.host_kind);
    if ((!model && f.category != Category::kCompute) || IsFoldedTail(name)) continue;
    if (f.category == Category::kHost) continue;  // counted in the host's time below
    double peer = PeerMedian(group, suspect, [&](size_t k) {
      const FunctionEntry* g = table.Find(group.members[k], f.name, f.category);
      return g ? static_cast<double>(g->mean_duration_us) * g->calls_per_iter : 0.0;
    });
    double mine = static_cast<double>(f.mean_duration_us) * f.calls_per_iter;
    if (peer <= 0) continue;
    (model ? model_mine : batch_mine) += mine;
    (model ? model_peers : batch_peers) += peer;
  }
  // The host's critical-path time (which already holds any host-category model-sized entry above).
  auto host_us = [&](size_t k) {
    const WorkerRow& row = group.row(k);
    return static_cast<double>(row.beta(Category::kHost)) * row.iteration_s * 1e6;
  };
  if (with_host) {
    model_mine += host_us(suspect);
    model_peers += PeerMedian(group, suspect, host_us);
  }
  Stretch out;
  out.batch_ratio = batch_peers > 0 ? batch_mine / batch_peers : 0;
  out.model_ratio = model_peers > 0 ? model_mine / model_peers : 0;
  out.model_peer_us = model_peers;
  return out;
}

// The node agent's μ of a worker's compute ops, weighted by their β: how much of the time its ops
// owned the critical path they had the processor. NaN without samples.
double ComputeUtilization(const WorkerGroup& group, size_t k) {
  double weighted = 0, beta = 0;
  for (const FunctionEntry& f : group.functions(k)) {
    if (f.category != Category::kCompute || !f.has_mu() || IsFoldedTail(group.table->name(f.name))) continue;
    weighted += static_cast<double>(f.mu) * f.beta;
    beta += f.beta;
  }
  return beta > 0 ? weighted / beta : NAN;
}

// A rank given more data keeps its processor at least as busy as its peers do (it never waits);
// a throttled or contended one gets the processor for a fraction of its ops' time. Measured with
// the agent on 4-rank CPU runs here: a 10 % CFS quota 0.08 against its peers' 0.21-0.37, a rank
// given sequences twice as long 0.69 against 0.47-0.52. Timings alone cannot always tell: a
// quota freezes the rank for whole periods, and the few ms of model-sized work per iteration can
// miss every freeze of a window.
std::string StarvedProcessor(const WorkerGroup& group, size_t suspect, double ratio) {
  double mine = ComputeUtilization(group, suspect);
  if (std::isnan(mine)) return "";
  std::vector<double> peers;
  for (size_t k = 0; k < group.size(); ++k) {
    double mu = k == suspect ? NAN : ComputeUtilization(group, k);
    if (!std::isnan(mu)) peers.push_back(mu);
  }
  if (peers.size() * 2 < group.size() - 1) return "";
  double peer = MedianInPlace(peers);
  if (mine * ratio > peer) return "";
  return fmt::format(
      "; its compute ops had the processor for μ {:.2f} of their time, its peers' {:.2f}: it is starved of "
      "the processor (a quota, throttling or a noisy neighbour), not given more data",
      mine, peer);
}

// Whether the suspect's training thread had the processor as readily as its peers': neither held
// back by its CPU quota nor queued for a CPU clearly longer than they were (its reading against
// their median, by the ratio that counts as more work and the noise floor). False without
// readings. A quota or a noisy neighbour leaves a rank waiting in the run queue; a rank given
// more work holds the processor. On the tuning split's 4-rank runs (2 cores): throttled ranks
// were queued 0.40-0.56 s per second against their peers' 0.04-0.11; ranks given longer
// sequences 0.20-0.26 against 0.16-0.42, and larger batches 0.22-0.28 against 0.18-0.30.
bool HadTheProcessor(const WorkerGroup& group, size_t suspect, double ratio, const Expectations& e) {
  auto queued = [&](size_t k) {
    const std::optional<CpuShare>& cpu = group.row(k).cpu;
    return cpu ? static_cast<double>(cpu->main_run_delay) : -1.0;
  };
  const std::optional<CpuShare>& mine = group.row(suspect).cpu;
  if (!mine || mine->main_run_delay < 0 || mine->throttled >= e.min_excess_beta) return false;
  std::vector<double> peers;
  for (size_t k = 0; k < group.size(); ++k) {
    if (k != suspect && queued(k) >= 0) peers.push_back(queued(k));
  }
  if (peers.empty() || peers.size() * 2 < group.size() - 1) return false;
  double peer = MedianInPlace(peers);
  double own = mine->main_run_delay;
  return own < ratio * peer || own - peer < e.min_excess_beta;
}

// Whether the suspect's training thread had a CPU longer than its peers' median over the window
// (OnCpuBeyondPeers), by the straggler floor of its group (true where not read: nothing to say).
// On CPU training its thread runs its ops: more data per step is more CPU time, however the
// scheduler queued it. The floor is the one a rank found by its fastest calls alone is held to
// (local_analysis.cc; the ranks given more data of stops 56-59's jobs that those calls found:
// their threads 0.097-0.359 longer): a healthy 3-stage pipeline's rank 4, its fastest calls 1.51x
// its one peer's and its compute +0.11 of a step, had its thread on a CPU 0.012 of the window longer.
bool RanLongerThanPeers(const WorkerGroup& group, size_t suspect, const Expectations& e) {
  const std::optional<double> beyond = OnCpuBeyondPeers(group)[suspect];
  return !beyond || *beyond >= StragglerFloor(group, e);
}

}  // namespace

double CallsRatioOfPeersWork(const WorkerGroup& group, size_t suspect) {
  const WorkerTable& table = *group.table;
  std::vector<std::pair<double, double>> ratios;  // (its calls over its peers', their β)
  for (const FunctionEntry& f : group.functions(suspect)) {
    if (f.category != Category::kCompute || IsFoldedTail(table.name(f.name))) continue;
    auto peers = [&](float FunctionEntry::*field) {
      return PeerMedian(group, suspect, [&](size_t k) {
        const FunctionEntry* g = table.Find(group.members[k], f.name, f.category);
        return g ? static_cast<double>(g->*field) : 0.0;
      });
    };
    double calls = peers(&FunctionEntry::calls_per_iter);
    if (calls > 0) ratios.emplace_back(f.calls_per_iter / calls, peers(&FunctionEntry::beta));
  }
  return WeightedMedianRatio(ratios);
}

ComputeCalls::ComputeCalls(const WorkerGroup& group) : calls_(group.size()) {
  for (size_t k = 0; k < group.size(); ++k) calls_[k] = group.row(k).compute_calls_per_iter;
  peers_ = MedianOfOthers(calls_);
  center_ = MedianAndMad(calls_);
}

bool ComputeCalls::StandsOut(size_t member, const Expectations& e) const {
  if (calls_[member] - peers_[member] < 2) return false;
  if (calls_.size() < 3) return calls_[member] >= e.imbalance_ratio * peers_[member];
  return RobustZ(calls_[member], center_, 1.0) >= e.outlier_z;
}

std::string ExtraCallsOfItsOwnCode(const WorkerGroup& group, size_t suspect, double ratio, bool more_work) {
  double peer_items = PeerMedian(group, suspect, [&](size_t k) { return group.row(k).dataloader_ops_per_iter; });
  double peer_calls = PeerMedian(group, suspect, [&](size_t k) { return group.row(k).compute_calls_per_iter; });
  const WorkerRow& mine = group.row(suspect);
  bool items_counted = LoaderOpsCountItems(group, suspect);
  if ((!items_counted && more_work) || peer_items <= 0 || peer_calls <= 0 ||
      (items_counted && mine.dataloader_ops_per_iter >= ratio * peer_items) ||
      mine.compute_calls_per_iter < ratio * peer_calls || mine.compute_calls_per_iter - peer_calls < 2) {
    return "";
  }
  double work_calls = CallsRatioOfPeersWork(group, suspect);
  if (work_calls >= ratio) return "";
  return fmt::format(
      "it calls {:.0f} compute ops per iteration against {:.0f} on its peers, but the ops they spend their time in "
      "only {:.2f}x as often, while {}: the extra calls are code of its own (a loop over a tensor's elements, logging, "
      "an evaluation), not more data",
      mine.compute_calls_per_iter, peer_calls, work_calls,
      items_counted ? fmt::format("its loader hands it their count of items ({:.0f} vs {:.0f})",
                                  mine.dataloader_ops_per_iter, peer_items)
                    : std::string("its ops' calls are no larger than theirs"));
}

WorkComparison CompareWork(const WorkerGroup& group, size_t suspect, const Expectations& e, const CallSizes* sizes) {
  const double ratio = e.imbalance_ratio;
  WorkComparison out;
  const WorkerTable& table = *group.table;
  bool loader_counted = false;  // its peers' loaders report items
  bool items_counted = LoaderOpsCountItems(group, suspect);
  // Items its loader slept over are no more data (LoaderWaitAsleep); its peers' counts still
  // judge its compute calls below.
  bool items_are_work = items_counted && !LoaderWaitAsleep(group, suspect, e);
  for (const Signal& signal : kSignals) {
    if (&signal == &kSignals[0] && !items_counted) continue;  // a worker loader's ops count batches
    double median = PeerMedian(group, suspect, [&](size_t k) { return signal.read(group.row(k)); });
    double mine = signal.read(group.row(suspect));
    if (&signal == &kSignals[0]) loader_counted = median > 0;
    if (&signal == &kSignals[0] && !items_are_work) continue;
    if (median > 0 && mine >= ratio * median && mine - median >= 2) {
      // More compute calls while its loader hands it its peers' count of items are more data
      // only where they are calls of the ops its peers spend their time in (a pass over its
      // functions, so only for a rank whose calls are up: ExtraCallsOfItsOwnCode). Where worker
      // processes load (no items counted), such calls leave it to the calls' sizes below.
      if (&signal == &kSignals[1] && (loader_counted || !items_counted) &&
          CallsRatioOfPeersWork(group, suspect) < ratio) {
        continue;
      }
      out.more_work = true;
      out.evidence =
          fmt::format("{} {:.0f} vs {:.0f} on its peers ({:.1f}x)", signal.label, mine, median, mine / median);
      return out;
    }
  }
  // Bytes moved by its collectives and copies.
  for (const FunctionEntry& f : group.functions(suspect)) {
    if (f.bytes_per_iter <= 0 || f.beta < 0.01f) continue;
    double median = PeerMedian(group, suspect, [&](size_t k) {
      const FunctionEntry* g = table.Find(group.members[k], f.name, f.category);
      return g ? static_cast<double>(g->bytes_per_iter) : 0.0;
    });
    if (median > 0 && f.bytes_per_iter >= ratio * median) {
      out.more_work = true;
      out.evidence = fmt::format("{} moves {:.0f} bytes per iteration vs {:.0f} on its peers", table.name(f.name),
                                 f.bytes_per_iter, median);
      return out;
    }
  }
  std::string function;
  if (ShapesDiffer(group, suspect, &function)) {
    out.more_work = true;
    out.evidence = fmt::format("{} runs on input shapes that differ from the majority's", function);
    return out;
  }
  // Without shapes: the batch's ops slower while model-sized work keeps its peers' pace (within
  // the same ratio that counts as more work). A slower processor stretches both: 1.8-7.5x on
  // model-sized work with the host's time in the throttle runs measured here (quotas 10-40 %),
  // 0.8-1.2x on ranks given more data.
  // CPU training only: on a GPU the gradient and optimizer ops seen here are the host's launches,
  // which a slower device does not stretch.
  if (group.row(suspect).has_device) return out;
  // The median calls: the work's own size, which preemptions do not move (a quota's freezes can:
  // local_analysis.cc judges a rank its quota held back by that).
  if (sizes && sizes->MoreData(ratio)) {
    out.more_work = true;
    out.source = WorkSource::kCallSizes;
    std::string quartile = sizes->low_quartile.measured
                               ? fmt::format(" (their lower quartile {:.2f}x)", sizes->low_quartile.batch_ratio)
                               : std::string();
    out.evidence = fmt::format(
        "its batch-sized ops' median calls take {:.2f}x its peers'{} while its gradient accumulation and optimizer "
        "step take {:.2f}x: it was given more data per step (longer sequences, larger samples), not a slower "
        "processor",
        sizes->median.batch_ratio, quartile, sizes->median.model_ratio);
    return out;
  }
  out.slower = StarvedProcessor(group, suspect, ratio);
  if (!out.slower.empty()) return out;
  // A rank that had the processor as readily as its peers is no slower processor: then its
  // batch-sized ops against its model-sized ops alone tell more data (the first stretched, the
  // second not) from a uniformly slower one (both alike). The host's time between ops is left
  // out there: on shared cores a rank given longer sequences had it 2.2x its peers' (the
  // scheduler's wake-ups), which had made it a slow worker.
  bool had_processor = HadTheProcessor(group, suspect, ratio, e);
  // Measured median calls that show no more data overrule the means below: both read the same
  // stretch, and the means also carry whatever preempted calls that rank happened to have (a
  // healthy 2-rank run's aten::fill_ took 1.93x its peer's time on average and 1.10x at the
  // median call). A rank that had the processor as readily as its peers carries no more
  // preemption in its means than they do, while the median of an op called with several shapes
  // a step can sit at any of them (edge19's 2-rank transformer given sequences twice as long on
  // rank 0, seed 925: aten::mm's median call 1.09x its peer's, its mean 1.35x, its lower quartile
  // 1.73x): there the mean calls decide, op by op (the weighted median of their ratios, as for
  // the median calls), since more data makes most of the batch's ops longer and one op's stretch
  // does not (edge20's healthy 2-rank MLP, seed 800: aten::fill_'s 107 calls a step took 2.5x
  // its peer's time, aten::addmm and aten::mm 0.97x; summed, its batch-sized ops took 1.9x).
  if (sizes && sizes->measured()) {
    if (!had_processor) return out;
    if (sizes->mean.Larger(ratio)) {
      out.more_work = true;
      out.source = WorkSource::kMeanTimings;
      out.evidence = fmt::format(
          "its batch-sized ops' mean calls take {:.2f}x its peers' (their median calls {:.2f}x) while its gradient "
          "accumulation and optimizer step take {:.2f}x, and its training thread waited for a CPU no longer than "
          "theirs: it was given more data per step (longer sequences, larger samples), not a slower processor",
          sizes->mean.batch_ratio, sizes->median.batch_ratio, sizes->mean.model_ratio);
    } else if (sizes->FastestCallsMoreData(ratio) && RanLongerThanPeers(group, suspect, e)) {
      // Where an op's calls outlast the scheduler's slice, both its median and its mean are the
      // contention's, and its fastest calls the work's (CallSizes::FastestCallsMoreData) -- where
      // its thread had the CPU longer too: a healthy 6-rank pipeline's rank 5 (2 loader workers a
      // rank, 18 processes on 2 cores) had its fastest calls at 1.53x its peers' with its thread
      // on a CPU 0.217 of the window against their 0.218, its compute stretched by queueing.
      out.more_work = true;
      out.source = WorkSource::kCallSizes;
      out.evidence = fmt::format(
          "its batch-sized ops' fastest calls (each op's lower quartile) take {:.2f}x its peers' (their median calls "
          "{:.2f}x, stretched by the scheduler on every rank) while its gradient accumulation and optimizer step take "
          "{:.2f}x, and its training thread waited for a CPU no longer than theirs: it was given more data per step "
          "(longer sequences, larger samples), not a slower processor",
          sizes->low_quartile.batch_ratio, sizes->median.batch_ratio,
          std::min(sizes->low_quartile.model_ratio, sizes->median.model_ratio));
    }
    return out;
  }
  double iteration_us = group.row(suspect).iteration_s * 1e6;
  Stretch stretch = CompareStretch(group, suspect, /*with_host=*/!had_processor);
  bool measurable = stretch.model_peer_us >= 0.01 * iteration_us;
  bool more_data = had_processor ? stretch.batch_ratio > 1 && stretch.model_ratio > 0 &&
                                       stretch.batch_ratio >= ratio * stretch.model_ratio
                                 : stretch.batch_ratio >= ratio && stretch.model_ratio < ratio;
  if (measurable && more_data) {
    out.more_work = true;
    out.source = WorkSource::kMeanTimings;
    out.evidence = fmt::format(
        "its batch-sized ops take {:.2f}x its peers' time while {} run{} at {:.2f}x{}: it was given more data per "
        "step (longer sequences, larger samples), not a slower processor",
        stretch.batch_ratio,
        had_processor ? "its gradient accumulation and optimizer step"
                      : "the work sized by the model (gradient accumulation, optimizer step, the host's time between "
                        "ops)",
        had_processor ? "" : "s", stretch.model_ratio,
        had_processor ? ", and its training thread waited for a CPU no longer than theirs" : "");
  }
  return out;
}

}  // namespace eroica
