#include "localize/global_analysis.h"

#include <fmt/core.h>

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <map>
#include <optional>
#include <unordered_map>

#include "base/robust_stats.h"
#include "localize/cpu_contention.h"
#include "localize/function_leads.h"
#include "localize/host_gaps.h"
#include "localize/line_points.h"
#include "summary/function_name.h"

namespace eroica {
namespace {

// A low quantile of `values` (the smallest below 10 of them), robust to one outlier.
double LowQuantile(std::vector<double> values) {
  size_t index = values.size() >= 10 ? values.size() / 10 : 0;
  std::nth_element(values.begin(), values.begin() + static_cast<long>(index), values.end());
  return values[index];
}

// Exposed communication that even the least-waiting rank pays is the collectives' own cost;
// what the others pay beyond it is waiting for that rank. Taken per iteration, then the median
// over the window: which rank waits least moves from iteration to iteration when the ranks wait
// for each other's CPU (more ranks than cores), while a slow network makes every rank pay in
// every iteration. Measured on 4-rank CPU runs here: the window's least-waiting rank paid
// 0.49 of a healthy run's step on an idle 2-core machine, its per-iteration level 0.28
// (saved healthy runs 0.09-0.23); a throttled link kept 0.47-0.55 either way.
double UnavoidableCommunication(const WorkerGroup& group) {
  std::vector<double> betas = CategoryBetas(group, Category::kCommunication);
  if (betas.empty()) return 0;
  const WorkerTable& table = *group.table;
  size_t iterations = SIZE_MAX;
  for (uint32_t member : group.members) iterations = std::min(iterations, table.iteration_betas(member).size());
  if (iterations == 0 || iterations == SIZE_MAX) return LowQuantile(std::move(betas));
  std::vector<double> levels;
  levels.reserve(iterations);
  std::vector<double> in_iteration(group.size());
  for (size_t i = 0; i < iterations; ++i) {
    for (size_t k = 0; k < group.size(); ++k) {
      in_iteration[k] = table.iteration_betas(group.members[k])[i][static_cast<size_t>(Category::kCommunication)];
    }
    levels.push_back(LowQuantile(in_iteration));
  }
  return MedianInPlace(levels);
}

std::vector<int> Listed(std::vector<int> ranks) {
  std::sort(ranks.begin(), ranks.end());
  if (ranks.size() > kMaxListedWorkers) ranks.resize(kMaxListedWorkers);
  return ranks;
}

// The ranks a global cost is on: every one that pays at least half of its typical level. A box
// decides whether the cost is global; a rank just under the box still pays it.
std::vector<int> RanksPaying(const WorkerGroup& group, const std::vector<double>& betas, double level) {
  std::vector<int> ranks;
  for (size_t k = 0; k < group.size(); ++k) {
    if (betas[k] >= 0.5 * level) ranks.push_back(group.row(k).rank);
  }
  return ranks;
}

bool MostWorkers(size_t count, size_t n, const Expectations& e) {
  return static_cast<double>(count) > e.global_fraction * static_cast<double>(n);
}

// The function of a category with the largest median β across the group.
std::pair<std::string, double> TopFunctionOf(const WorkerGroup& group, Category category) {
  std::unordered_map<StringId, std::vector<double>> betas;
  for (size_t k = 0; k < group.size(); ++k) {
    for (const FunctionEntry& f : group.functions(k)) {
      if (f.category == category) betas[f.name].push_back(f.beta);
    }
  }
  std::pair<std::string, double> best{"", -1};
  for (auto& [name, values] : betas) {
    values.resize(group.size(), 0.0);
    double median = MedianInPlace(values);
    if (median > best.second) best = {std::string(group.table->name(name)), median};
  }
  return best;
}

Finding MakeGlobal(const WorkerGroup& group, Category category, const std::string& function, double level, double bound,
                   std::vector<int> ranks) {
  Finding f;
  f.scope = FindingScope::kGlobal;
  f.category = FindingCategoryOf(category);
  f.workers = Listed(std::move(ranks));
  f.function = function;
  f.beta = level;
  f.peer_beta = bound;
  f.expectation_distance = level - bound;
  f.impact_s_per_iter = (level - bound) * MedianIterationS(group);
  f.action = AdviceFor(f.category, f.scope, -1);
  return f;
}

// Whether the nodes' CPUs explain a category's wait (cpu_contention.h), asked once per category
// and group, whichever rule asks first (the category's box, a link's μ box); its note is added
// once. Only on CPU training, where the ranks, their collectives' threads and their loaders share
// the cores that do the step's work. On GPU training the device does it, collectives wait on the
// device, and cores too busy for the loader are the input pipeline's own shortage: a finding.
class CpuExplanations {
 public:
  CpuExplanations(const WorkerGroup& group, bool has_device, std::vector<std::string>* notes)
      : group_(group), cpu_training_(!has_device), notes_(notes) {}

  bool Explain(Category category, double level) {
    if (!cpu_training_) return false;
    auto [it, fresh] = why_.try_emplace(category);
    if (fresh) {
      if (category == Category::kCommunication) it->second = CpuExplainsCommunication(group_, level);
      if (category == Category::kDataloader) it->second = CpuExplainsDataloader(group_, level);
      if (!it->second.empty()) notes_->push_back(it->second);
    }
    return !it->second.empty();
  }

  // Whether `category`'s wait was asked about and explained.
  bool Explained(Category category) const {
    auto it = why_.find(category);
    return it != why_.end() && !it->second.empty();
  }

 private:
  const WorkerGroup& group_;
  bool cpu_training_;
  std::vector<std::string>* notes_;
  std::map<Category, std::string> why_;
};

// `unavoidable`: UnavoidableCommunication(group), the communication category's level.
// The ranks whose DataLoader workers slept in their own work making batches by the noise floor
// or more (loader_work.h), and at least half as long as the most asleep rank's: the input
// pipeline is slow on them, whichever of them stalled longest this window (prefetching ranks stall
// in turns). A stall every rank's workers have makes each sleep about as long, since they make
// batches at the job's common pace (val34's, val34f's and val34g's seven global stalls and slow
// workers with worker processes: every rank at 0.8x of the most asleep or more); a healthy rank's workers beside one
// rank's stall sleep a trace on a loaded node (val34g's 2- and 3-rank stalls, seeds 8300-8301:
// 0.04 and 0.03 s per second against the stalled rank's 1.97 and 1.09, which had made them
// `global dataloader`).
std::vector<int> LoaderAsleepRanks(const WorkerGroup& group, const Expectations& e) {
  float most = 0;
  for (size_t k = 0; k < group.size(); ++k) {
    const std::optional<CpuShare>& cpu = group.row(k).cpu;
    if (cpu) most = std::max(most, cpu->loader_asleep);
  }
  double floor = std::max<double>(e.min_excess_beta, 0.5 * most);
  std::vector<int> ranks;
  for (size_t k = 0; k < group.size(); ++k) {
    const std::optional<CpuShare>& cpu = group.row(k).cpu;
    if (cpu && cpu->loader_asleep >= floor) ranks.push_back(group.row(k).rank);
  }
  return ranks;
}

// A global cost's ranks: those paying at least half its level, and for the loader those whose
// workers slept in their own work too (probe19's 3-rank transformer, seed 507: every rank's
// workers asleep 1.5-1.7 s per second, one rank's wait 0.12 of the window against 0.41-0.47).
std::vector<int> RanksOfGlobalCost(const WorkerGroup& group, Category category, const std::vector<double>& betas,
                                   double level, const Expectations& e) {
  std::vector<int> ranks = RanksPaying(group, betas, level);
  if (category != Category::kDataloader) return ranks;
  for (int rank : LoaderAsleepRanks(group, e)) {
    if (std::find(ranks.begin(), ranks.end(), rank) == ranks.end()) ranks.push_back(rank);
  }
  std::sort(ranks.begin(), ranks.end());
  return ranks;
}

// Whether every member's DataLoader workers' sleep in their own work was read (CpuShare).
bool LoaderSleepRead(const WorkerGroup& group) {
  return std::all_of(group.members.begin(), group.members.end(), [&](uint32_t member) {
    const std::optional<CpuShare>& cpu = group.table->row(member).cpu;
    return cpu && cpu->loader_asleep >= 0;
  });
}

// A loader slow by itself is slow where its workers sleep in their own work (a read, a stall);
// the scheduler queues a worker, it does not put it to sleep. Where that was read on every rank
// and only a minority's workers slept so, the input pipeline is slow on those ranks, however long
// the others also waited for batches: their cost is local (local_analysis.cc). val34f's 2-rank
// MLP with a 70 ms collate stall in rank 1's 2 workers (seed 8214): its workers asleep 1.91 s per
// second, rank 0's 0.00; loader waits 0.38 and 0.12 of the step, both over the 0.10 box, so their
// median (of two, the mean) made it `global dataloader`.
bool LoaderSlowOnAMinority(const WorkerGroup& group, const Expectations& e) {
  size_t asleep = LoaderAsleepRanks(group, e).size();
  return asleep > 0 && !MostWorkers(asleep, group.size(), e) && LoaderSleepRead(group);
}

std::vector<Finding> CategoryFindings(const WorkerGroup& group, const Expectations& e, bool has_device,
                                      double unavoidable, CpuExplanations* cpu) {
  std::vector<Finding> out;
  size_t n = group.size();
  for (int c = 0; c < kCategoryCount; ++c) {
    auto category = static_cast<Category>(c);
    std::optional<double> high = e.BetaHigh(Box::Target::kCategory, category, std::nullopt, has_device);
    if (!high) continue;
    std::vector<double> betas = CategoryBetas(group, category);
    std::vector<int> over;
    for (size_t k = 0; k < n; ++k) {
      if (e.CategoryDistance(category, betas[k], has_device) > 0) over.push_back(group.row(k).rank);
    }
    if (!MostWorkers(over.size(), n, e)) continue;
    if (category == Category::kDataloader && LoaderSlowOnAMinority(group, e)) continue;
    double level = category == Category::kCommunication ? unavoidable : MedianInPlace(betas);
    if (level - *high < e.min_excess_beta || cpu->Explain(category, level)) continue;
    auto [function, function_beta] = TopFunctionOf(group, category);
    size_t count = over.size();
    Finding f =
        MakeGlobal(group, category, function, level, *high, RanksOfGlobalCost(group, category, betas, level, e));
    f.evidence = fmt::format(
        "{} of {} workers spend β {:.2f} of each iteration in {} (expected at "
        "most {:.2f}); top function {} (median β {:.3f})",
        count, n, level, CategoryName(category), *high, function, function_beta);
    if (category == Category::kCommunication) {
      f.evidence += "; even the least-waiting rank pays it, so no straggler explains it";
    }
    out.push_back(std::move(f));
  }
  return out;
}

// Each rank's largest point of code (IsCodePoint) other than `point`.
std::vector<double> NextHostPoints(const WorkerGroup& group, StringId point) {
  std::vector<double> next;
  next.reserve(group.size());
  for (size_t k = 0; k < group.size(); ++k) {
    double best = 0;
    for (const FunctionEntry& f : group.functions(k)) {
      if (f.name != point && IsCodePoint(group, f)) best = std::max(best, static_cast<double>(f.beta));
    }
    next.push_back(best);
  }
  return next;
}

// What each rank's largest other host point takes (median over ranks): the share a program point
// of this job's own Python holds anyway. A Python point over its box costs what it holds above that,
// not above the box: the box decides that one point is too much, the job's other points say what
// a point normally costs (a 40 ms loop at 0.49 of a step, other points at 0.05: 0.44 is lost, not
// the 0.09 above a 0.40 box).
double NextHostPointLevel(std::vector<double> next) { return MedianInPlace(next); }

// The ranks a Python or GC point's global cost is on: those paying at least half its level
// (RanksPaying), and those where the point stands above the rank's own largest other host point
// by k of the spread those other points have across ranks (at least the noise floor). The same
// work runs at different speeds on shared cores: a 7-rank run with a GC storm on every rank had
// rank 0's collections take 54 ms a step, 0.20 of it, against 106-135 ms (0.40-0.52) on its peers,
// while its other host points held 0.006; half the level would have left it out.
// `next`: NextHostPoints(group, point).
std::vector<int> RanksPayingAtPoint(const WorkerGroup& group, const std::vector<double>& next,
                                    const std::vector<double>& betas, double level, const Expectations& e) {
  double spread = 1.4826 * MedianAndMad(next).mad;
  double bar = std::max(e.min_excess_beta, e.outlier_z * std::max(spread, e.min_scale_beta));
  std::vector<int> ranks;
  for (size_t k = 0; k < group.size(); ++k) {
    if (betas[k] >= 0.5 * level || betas[k] - next[k] >= bar) ranks.push_back(group.row(k).rank);
  }
  return ranks;
}

struct OverBox {
  HostKind host_kind = HostKind::kNone;
  std::vector<int> ranks;
  std::vector<double> betas;
  std::vector<double> distances;
};

// The rank that waits least in collectives: the one the others wait for, when one is late.
int LeastWaitingRank(const WorkerGroup& group) {
  size_t least = 0;
  for (size_t k = 1; k < group.size(); ++k) {
    if (group.row(k).beta(Category::kCommunication) < group.row(least).beta(Category::kCommunication)) least = k;
  }
  return group.row(least).rank;
}

std::vector<Finding> FunctionFindings(const WorkerGroup& group, const Expectations& e, bool has_device,
                                      bool straggler_found, double unavoidable, CpuExplanations* cpu) {
  // Ranks that wait in a collective for a late peer hold it open while their link moves nothing:
  // over a link box, but the late rank, whose transfer ran at once, is not. A slow network makes
  // every rank pay, the late one too (as for the communication category's box). When a straggler
  // was found, its peers' waits explain their idle links whatever the late rank's own transfer
  // showed (a CFS quota freezes it inside its collectives too); a slow network still shows in
  // what even the least-waiting rank pays (the category's box).
  int least_waiting = LeastWaitingRank(group);
  std::map<std::pair<Category, StringId>, OverBox> over;
  for (size_t k = 0; k < group.size(); ++k) {
    for (const FunctionEntry& f : group.functions(k)) {
      if (f.beta < e.min_beta) continue;
      double d = e.Distance(f.category, f.host_kind, f.beta, f.mu, f.sigma, has_device);
      // A resumption after a collective is the wait's tail (queued for a CPU), not code.
      std::string_view name = group.table->name(f.name);
      if (d <= 0 || IsFoldedTail(name) || IsResumePoint(name)) continue;
      OverBox& o = over[{f.category, f.name}];
      o.host_kind = f.host_kind;
      o.ranks.push_back(group.row(k).rank);
      o.betas.push_back(f.beta);
      o.distances.push_back(d);
    }
  }
  // One finding per category: its worst function.
  std::map<Category, Finding> best;
  size_t n = group.size();
  for (auto& [key, o] : over) {
    if (!MostWorkers(o.ranks.size(), n, e)) continue;
    if (key.first == Category::kCommunication &&
        (straggler_found || std::find(o.ranks.begin(), o.ranks.end(), least_waiting) == o.ranks.end() ||
         cpu->Explain(Category::kCommunication, unavoidable))) {
      continue;
    }
    std::vector<double> betas = o.betas;
    betas.resize(n, 0.0);
    double median_beta = MedianInPlace(betas);
    double median_distance = MedianInPlace(o.distances);
    if (median_distance < e.min_excess_beta) continue;
    std::string name(group.table->name(key.second));
    size_t count = o.ranks.size();
    std::vector<double> all(n, 0.0);
    for (size_t k = 0; k < n; ++k) {
      if (const FunctionEntry* f = group.table->Find(group.members[k], key.second, key.first)) all[k] = f->beta;
    }
    bool python_point = o.host_kind == HostKind::kPython && !IsFoldedTail(name) && name != kUnattributedPython;
    bool code_point = python_point || o.host_kind == HostKind::kGc;
    // Each rank's largest other host point: read once, for the ranks paying and the usual level.
    std::vector<double> next = code_point ? NextHostPoints(group, key.second) : std::vector<double>{};
    Finding f = MakeGlobal(
        group, key.first, name, median_beta, median_beta - median_distance,
        code_point ? RanksPayingAtPoint(group, next, all, median_beta, e) : RanksPaying(group, all, median_beta));
    if (python_point) {
      double usual = std::min(median_beta - median_distance, NextHostPointLevel(next));
      f.impact_s_per_iter = (median_beta - usual) * MedianIterationS(group);
    }
    f.evidence = fmt::format("{} of {} workers spend β {:.3f} in {} (expected at most {:.3f})", count, n, median_beta,
                             name, median_beta - median_distance);
    auto it = best.find(key.first);
    if (it == best.end() || f.impact_s_per_iter > it->second.impact_s_per_iter) best[key.first] = f;
  }
  std::vector<Finding> out;
  out.reserve(best.size());
  for (auto& [category, f] : best) out.push_back(std::move(f));
  return out;
}

// Host work below every box. Scheduling noise on a shared machine moves between program points,
// iterations and ranks; real work (a loop, GC, a slow collate, a checkpoint in the step) sits at
// one point in every step and is each rank's largest host cost. So the point that leads each
// rank's next host point on (almost) every rank, by more than the job's own noise and the noise
// floor, is a global cost. The noise of one rank's lead is the spread of those next points across
// ranks; the lead tested is the median over n ranks, whose own noise is that spread × 1.2533/√n
// (a median's standard error), and it must stand k of those above zero, as a window's excess
// stands k of its standard errors (iteration_evidence.h). That noise is floored at the spread
// floor, so the smallest lead that counts stays k × 0.01: a healthy job's one larger Python gap
// is no global cost. What it costs is counted above the next point only: the part the noise
// cannot explain. A point here is a line of the job's code where the ranks' stack samples tell
// (line_points.h): the trace names the same code after whichever ops surround it in a step.
std::optional<Finding> ConsistentHostPoint(const WorkerGroup& group, const Expectations& e) {
  size_t n = group.size();
  if (n < 2) return std::nullopt;
  struct TopTwo {
    uint64_t key = 0;
    double first = 0, second = 0;
  };
  const std::vector<std::vector<LinePoint>> points = LinePoints(group);
  std::vector<TopTwo> tops(n);
  std::unordered_map<uint64_t, size_t> led;
  for (size_t k = 0; k < n; ++k) {
    TopTwo& t = tops[k];
    for (const LinePoint& p : points[k]) {
      if (!InEveryIteration(p.calls_per_iter, group.row(k).iterations)) continue;
      if (p.beta > t.first) {
        t.second = t.first;
        t.first = p.beta;
        t.key = p.key;
      } else if (p.beta > t.second) {
        t.second = p.beta;
      }
    }
    if (t.first > 0) ++led[t.key];
  }
  uint64_t point = 0;
  size_t leading = 0;
  for (const auto& [key, count] : led) {
    if (count > leading || (count == leading && key < point)) point = key, leading = count;
  }
  // One rank in eight, and one of any group of three or more, may be the exception: its own
  // noise, or a local fault on top, can put another point first there. The lead tested is the
  // median over ranks and the ranks paying are counted apart (RanksPayingAtPoint), so one rank
  // cannot make the cost. probe23's 5-rank MLP with 14 % of each step in Python on every rank
  // (seed 515): the point held 0.09-0.13 on every rank, but 0.10 on rank 2, whose one noisy
  // point held 0.12.
  size_t exceptions = n >= 3 ? std::max<size_t>(1, n / 8) : 0;
  if (leading == 0 || leading + exceptions < n) return std::nullopt;
  // `others`: each rank's largest other point, in every step or not (as NextHostPoints).
  std::vector<double> betas, usual, next, leads, others;
  const LinePoint* named = nullptr;  // the largest of the point's, across ranks: it names the finding
  for (size_t k = 0; k < n; ++k) {
    const LinePoint* at = nullptr;
    double other = 0;
    for (const LinePoint& p : points[k]) {
      if (p.key == point) {
        at = &p;
      } else {
        other = std::max(other, p.beta);
      }
    }
    if (at != nullptr && (named == nullptr || at->largest->beta > named->largest->beta)) named = at;
    double beta = at != nullptr ? at->beta : 0;
    double runner_up = tops[k].key == point ? tops[k].second : tops[k].first;
    betas.push_back(beta);
    usual.push_back(at != nullptr ? at->usual : 0);
    next.push_back(runner_up);
    leads.push_back(beta - runner_up);
    others.push_back(other);
  }
  RobustCenter noise = MedianAndMad(next);
  double spread = 1.4826 * noise.mad;
  double lead = MedianInPlace(leads);
  double lead_noise = std::max(kMedianStandardError * spread / std::sqrt(static_cast<double>(n)), e.min_scale_beta);
  bool leads_the_noise = lead >= std::max(e.min_excess_beta, e.outlier_z * lead_noise);
  // Or the point holds the same share on every rank: work in the step costs each rank alike,
  // where the scheduler's noise at a point varies from rank to rank as much as it is large. Its
  // level must stand k of its own spread across ranks (floored at the spread floor, so at least
  // k x 0.01) above zero. Over the 123 healthy runs of the 16- to 18-series the largest Python
  // point of a run stood at most 2.4 of its spreads above zero (0.05 of the step at most); the
  // light global Python runs 3.2-17.4 (0.13-0.20 of the step). tuning18's (seed 0) was missed by
  // the lead alone: its point held 0.12-0.16 on every rank, the next points 0.004-0.085.
  // Work in the step is paid in every step, so the share tested is what the point's usual call
  // explains (host_gaps.h). A healthy 3-rank CNN run beside another job (cores 97 % busy) held
  // 0.053-0.075 at its per-step heartbeat write's point on every rank, 5.9 floors above zero,
  // in one long call of five each (median call 0.2 ms, mean 5.8-8.5 ms): the ranks were queued
  // alike there, no code ran there longer.
  RobustCenter across = MedianAndMad(usual);
  bool same_on_every_rank = across.median >= e.outlier_z * std::max(1.4826 * across.mad, e.min_scale_beta);
  if (!leads_the_noise && !same_on_every_rank) return std::nullopt;
  auto [low_it, high_it] = std::minmax_element(betas.begin(), betas.end());
  double low = *low_it, high = *high_it;
  std::vector<double> sorted = betas;
  double level = MedianInPlace(sorted);
  // A cost of the job's own code is paid on (nearly) every rank. The median lead of two ranks is
  // their mean: a 2-rank run whose throttled rank held 0.18 of a step at a point where its peer
  // held 0.01 passed the lead test on that one rank alone.
  std::vector<int> paying = RanksPayingAtPoint(group, others, betas, level, e);
  if (!MostWorkers(paying.size(), n, e) || named == nullptr) return std::nullopt;
  Finding f = MakeGlobal(group, Category::kHost, std::string(group.table->name(named->largest->name)), level,
                         noise.median, std::move(paying));
  std::string joined;
  if (named->by_line && named->points > 1) {
    joined = fmt::format(
        " with the {} other program points of its line {} (the ops around the same code differ from "
        "step to step)",
        named->points - 1, group.table->name(static_cast<StringId>(point >> 1)));
  }
  f.evidence = fmt::format(
      "on {} of {} workers {}{} is the largest host cost: β {:.3f} (from {:.3f} to {:.3f}), {:.3f} above each one's "
      "next host point, whose spread across workers is {:.3f}",
      leading, n, f.function, joined, level, low, high, lead, spread);
  f.evidence += leads_the_noise
                    ? std::string("; scheduling noise moves between points and ranks, work in the step stays at one")
                    : fmt::format(
                          "; its own spread across workers is {:.3f}: the same share on every rank, as "
                          "work in the step costs each alike, where scheduling noise varies as much as "
                          "it is large",
                          1.4826 * across.mad);
  return f;
}

// Every rank's input pipeline slow by itself, below the loader's box. Ranks whose loader workers
// prefetch stall in turns, each in a different step, and while one waits for its batch the others
// wait for it at the next collective: the window's loader share stays low on each rank, and the
// median over ranks in a step lower still, while the job pays the slowest loader of every step.
// Workers that sleep in their own work (a read, a remote fetch, a lock: loader_work.h) are slow
// by themselves; the scheduler queues a worker, it does not put it to sleep. So where most ranks'
// workers slept making batches by the noise floor or more, and the step's longest loader wait
// (over ranks, median over the window's steps) clears the loader's box by the floor, the input
// pipeline is a global cost at that level. probe19's 5-rank MLP whose every worker waited 10 ms
// per sample (seed 607): workers asleep 1.09-1.15 s per second on every rank (healthy ones 0-0.01),
// loader shares 0.01-0.23 of the window by rank, the longest wait of each step 0.18-0.51.
std::optional<Finding> LoaderAsleepEverywhere(const WorkerGroup& group, const Expectations& e, bool has_device) {
  size_t n = group.size();
  std::optional<double> high = e.BetaHigh(Box::Target::kCategory, Category::kDataloader, std::nullopt, has_device);
  if (n < 2 || !high) return std::nullopt;
  std::vector<int> asleep = LoaderAsleepRanks(group, e);
  if (!MostWorkers(asleep.size(), n, e)) return std::nullopt;
  size_t iterations = SIZE_MAX;
  for (uint32_t member : group.members) iterations = std::min(iterations, group.table->iteration_betas(member).size());
  if (iterations == 0 || iterations == SIZE_MAX) return std::nullopt;
  constexpr auto kLoader = static_cast<size_t>(Category::kDataloader);
  std::vector<double> longest(iterations, 0.0);
  for (uint32_t member : group.members) {
    std::span<const std::array<float, kCategoryCount>> steps = group.table->iteration_betas(member);
    for (size_t i = 0; i < iterations; ++i) longest[i] = std::max(longest[i], static_cast<double>(steps[i][kLoader]));
  }
  double level = MedianInPlace(longest);
  if (level - *high < e.min_excess_beta) return std::nullopt;
  auto [function, function_beta] = TopFunctionOf(group, Category::kDataloader);
  size_t count = asleep.size();
  Finding f = MakeGlobal(group, Category::kDataloader, function, level, *high, std::move(asleep));
  f.evidence = fmt::format(
      "on {} of {} workers the DataLoader's worker processes slept in their own work making batches (their reads, "
      "transforms or locks; the scheduler queues a worker, it does not put it to sleep), and in each step the rank "
      "that waited longest for its batch waited β {:.2f} of it (median over steps; expected at most {:.2f}): the "
      "ranks stall in turns and the others wait for each at the next collective; top function {} (median β {:.3f})",
      count, n, level, *high, function, function_beta);
  return f;
}

}  // namespace

std::vector<Finding> FindGlobalProblems(const WorkerGroup& group, const Expectations& e, bool straggler_found,
                                        std::vector<std::string>* notes, bool* collectives_waited_for_cpu) {
  if (group.size() == 0) return {};
  std::vector<std::string> ignored;
  bool has_device = group.row(0).has_device;
  CpuExplanations cpu(group, has_device, notes != nullptr ? notes : &ignored);
  double unavoidable = UnavoidableCommunication(group);
  std::vector<Finding> out = CategoryFindings(group, e, has_device, unavoidable, &cpu);
  for (Finding& f : FunctionFindings(group, e, has_device, straggler_found, unavoidable, &cpu)) {
    bool covered = std::any_of(out.begin(), out.end(), [&](const Finding& g) { return g.category == f.category; });
    if (!covered) out.push_back(std::move(f));
  }
  bool loader_covered =
      std::any_of(out.begin(), out.end(), [](const Finding& g) { return g.category == FindingCategory::kDataloader; });
  if (!loader_covered) {
    if (std::optional<Finding> loader = LoaderAsleepEverywhere(group, e, has_device)) out.push_back(std::move(*loader));
  }
  bool host_covered =
      std::any_of(out.begin(), out.end(), [](const Finding& g) { return g.category == FindingCategory::kHost; });
  if (!host_covered) {
    if (std::optional<Finding> point = ConsistentHostPoint(group, e)) out.push_back(std::move(*point));
  }
  if (collectives_waited_for_cpu != nullptr && cpu.Explained(Category::kCommunication)) {
    *collectives_waited_for_cpu = true;
  }
  return out;
}

}  // namespace eroica
