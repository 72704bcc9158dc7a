#include "diff/busy_loader_workers.h"

#include <fmt/core.h>

#include <algorithm>
#include <map>
#include <string>
#include <utility>

#include "base/robust_stats.h"
#include "localize/cpu_contention.h"

namespace eroica {
namespace {

// The rank's DataLoader workers' CPU per iteration, ms.
double LoaderCpuMs(const WorkerPattern& w) { return w.cpu->loader_cpu * w.iteration_s * 1e3; }

// The loader's function on the critical path (the rank's largest dataloader function), or "".
std::string LoaderFunction(const WorkerPattern& w) {
  const FunctionPattern* best = nullptr;
  for (const FunctionPattern& f : w.functions) {
    if (f.category == Category::kDataloader && (best == nullptr || f.beta > best->beta)) best = &f;
  }
  return best != nullptr ? best->name : "";
}

// A rank's workers grew where their CPU per iteration rose by this share of the step (StepMs):
// in 25 sessions of the audio job with workers and no loader fault a rank rose 1.3 % at most (README's
// table). What counts is what they took together on a node (over its cores), held to the
// slowdown's share (those sessions: 1.8 % at most; every rank's workers slowed: 9.6-20.6 %): 6
// ranks' workers at +8.3-12.2 ms a step each took 30 ms of a 228 ms step from 2 cores, none 5 %
// alone.
constexpr double kRankGrewShare = 0.02;

struct Grown {
  const WorkerPattern* base;
  const WorkerPattern* now;
  double grown_ms;
};

// A rank's workers whose growth is mostly the one every rank shares: what they added beyond the
// median of the others' growth (their own part) is less than that median (the shared part). Their
// rank waited longest for its batches in this window by its turn: workers that prefetch fall behind
// in turns where every rank's workers fight for the same cores. Ranks doing the same added work
// spread by a third: an unseen 5-rank contrastive job whose every rank's colour jitter ran Python
// passes (2 cores) grew its ranks' workers +82 to +119 ms of CPU a step, rank 0's 1.34 times the
// others' median, and named rank 0 `local dataloader` (the next session: +72 to +108, 1.31 times).
// A rank's own loader fault adds to its workers alone; the others' grow by nothing.
constexpr double kTurnRatio = 2.0;

// A rank's workers' growth and the median of the others', ms of CPU a step; mine < 0 where the
// rank's workers did not grow (or there are no others).
struct GrowthAgainstOthers {
  double mine = -1;
  double others = 0;
};

GrowthAgainstOthers GrowthOf(const std::vector<Grown>& grown, int rank) {
  std::vector<double> others;
  double mine = -1;
  for (const Grown& g : grown) {
    if (g.now->rank == rank) {
      mine = g.grown_ms;
    } else {
      others.push_back(g.grown_ms);
    }
  }
  if (others.empty()) return {};
  return {mine, MedianInPlace(others)};
}

// The local loader findings that are such turns.
bool IsATurn(const Finding& f, const std::vector<Grown>& grown) {
  if (f.scope != FindingScope::kLocal || f.category != FindingCategory::kDataloader || f.workers.size() != 1) {
    return false;
  }
  const GrowthAgainstOthers growth = GrowthOf(grown, f.workers.front());
  return growth.mine >= 0 && growth.mine <= kTurnRatio * growth.others;
}

// The rank's workers' hottest frame that their baseline did not list ("" where none).
std::string NewHottestFrame(const Grown& g) {
  for (const HotFrame& frame : g.now->loader_worker_frames) {
    if (std::none_of(g.base->loader_worker_frames.begin(), g.base->loader_worker_frames.end(),
                     [&](const HotFrame& old) { return old.location == frame.location; })) {
      return frame.location;
    }
  }
  return "";
}

// The slowdown the workers' taken cores are held to: what `diagnosis`'s findings leave of it
// (UnexplainedSlowdownMs), or, where they claim all of it but for a hang, the whole slowdown.
// What the workers took is measured on its own, not as what the other findings leave: a
// finding's impact, read from how long the others wait for its rank, overstates what the job
// lost where that waiting overlapped slack it had anyway. An unseen 2-stage pipeline whose rank 3
// (last stage, idle through every step's fill) saved checkpoints (304 ms/iter) while every rank's
// workers took 64 ms/iter of the 2 cores went 274 -> 431 ms a step: the checkpoint had explained
// all of it.
double SlowdownToHoldTo(const PatternDiff& diff, const Diagnosis& diagnosis, const BaselineOptions& options,
                        const CoresNow& cores) {
  const double left_ms = UnexplainedSlowdownMs(diff, diagnosis, options, cores);
  const bool hang = std::any_of(diagnosis.findings.begin(), diagnosis.findings.end(),
                                [](const Finding& f) { return f.category == FindingCategory::kHang; });
  return left_ms > 0 || hang ? left_ms : UnexplainedSlowdownMs(diff, Diagnosis{}, options, cores);
}

// Whether a finding of the diagnosis (not standing) already names the rank's loader.
bool LoaderNamed(const Diagnosis& diagnosis, int rank) {
  return std::any_of(diagnosis.findings.begin(), diagnosis.findings.end(), [&](const Finding& f) {
    return !f.standing && f.category == FindingCategory::kDataloader &&
           std::find(f.workers.begin(), f.workers.end(), rank) != f.workers.end();
  });
}

}  // namespace

void FindOwnLoaderWorkersTakingCores(const std::vector<WorkerPattern>& base, const std::vector<WorkerPattern>& now,
                                     const PatternDiff& diff, Diagnosis* diagnosis, const BaselineOptions& options) {
  std::vector<Grown> read;  // every rank whose workers were read at both times, grown or not
  for (const auto& [b, w] : PairsByRank(base, now)) {
    if (!w->cpu || !b->cpu || !LoaderWorkersRead(*w->cpu) || !LoaderWorkersRead(*b->cpu)) continue;
    read.push_back({b, w, LoaderCpuMs(*w) - LoaderCpuMs(*b)});
  }
  if (read.size() < 2) return;
  const double step_ms = StepMs(diff);
  const auto grew = [&](const Grown& g) { return g.grown_ms >= kRankGrewShare * step_ms; };
  // Almost every rank's: FindLoaderWorkersTakingCores's, or what it left.
  if (AlmostAll(static_cast<size_t>(std::count_if(read.begin(), read.end(), grew)), read.size(), options)) return;
  std::sort(read.begin(), read.end(), [](const Grown& a, const Grown& b) { return a.grown_ms > b.grown_ms; });
  const CoresNow cores = ReadCoresNow(now);
  for (const Grown& g : read) {
    if (!grew(g)) break;
    const GrowthAgainstOthers growth = GrowthOf(read, g.now->rank);
    const double own_ms = growth.mine - std::max(0.0, growth.others);
    if (growth.mine <= kTurnRatio * std::max(0.0, growth.others)) continue;  // mostly what every rank adds
    if (g.now->cpu->host_busy < kBusyCoresShare) continue;                   // an idle core gave them their time
    const double node_cores = std::max(1.0, static_cast<double>(g.now->cpu->cpus));
    const double taken_ms = own_ms / node_cores;
    if (taken_ms < options.min_slowdown_share * step_ms || LoaderNamed(*diagnosis, g.now->rank)) continue;
    const double slowdown_ms = SlowdownToHoldTo(diff, *diagnosis, options, cores);
    if (slowdown_ms <= 0) return;
    Finding f;
    f.from_baseline = true;
    f.scope = FindingScope::kLocal;
    f.category = FindingCategory::kDataloader;
    f.workers = {g.now->rank};
    f.function = LoaderFunction(*g.now);
    if (f.function.empty()) f.function = "(DataLoader worker processes)";
    f.location = NewHottestFrame(g);
    f.impact_s_per_iter = std::min(taken_ms, slowdown_ms) / 1e3;
    f.cores_taken_s_per_iter = taken_ms / 1e3;
    f.beta = diff.now.iteration_ms > 0 ? std::min(taken_ms, slowdown_ms) / diff.now.iteration_ms : 0;
    f.evidence = fmt::format(
        "against the baseline: rank {}'s DataLoader workers use {:.1f} ms of CPU per iteration, {:.1f} ms at the "
        "baseline ({:+.1f}; the other ranks' {:+.1f}, median); its node's {:.0f} cores were busy {:.0f}% of the "
        "window, so that time came from the training threads of every rank on them: {:.1f} ms/iter of the {:.1f} "
        "ms/iter slowdown {}",
        g.now->rank, LoaderCpuMs(*g.now), LoaderCpuMs(*g.base), growth.mine, growth.others, node_cores,
        100 * g.now->cpu->host_busy, std::min(taken_ms, slowdown_ms), slowdown_ms,
        SlowdownSource(diff, options, slowdown_ms));
    f.action = fmt::format(
        "Rank {}'s DataLoader workers do more work per batch than at the baseline{} on cores the training needs: find "
        "what changed in its data (py-spy dump --pid of a worker), make that work cheaper, or give the workers "
        "cores of their own.",
        g.now->rank, f.location.empty() ? "" : fmt::format(" (their hottest code: {})", f.location));
    FoldSlowerOpsCostingNoMoreThan(diagnosis, &f, f.cores_taken_s_per_iter);
    InsertUnexplainedCause(diagnosis, std::move(f), cores);
  }
}

void FindLoaderWorkersTakingCores(const std::vector<WorkerPattern>& base, const std::vector<WorkerPattern>& now,
                                  const PatternDiff& diff, Diagnosis* diagnosis, const BaselineOptions& options) {
  size_t read = 0;  // ranks whose workers were read at both times
  std::vector<Grown> grown;
  for (const auto& [b, w] : PairsByRank(base, now)) {
    if (!w->cpu || !b->cpu || !LoaderWorkersRead(*w->cpu) || !LoaderWorkersRead(*b->cpu)) continue;
    ++read;
    double delta = LoaderCpuMs(*w) - LoaderCpuMs(*b);
    if (delta >= kRankGrewShare * StepMs(diff)) grown.push_back({b, w, delta});
  }
  if (!AlmostAll(grown.size(), read, options)) return;
  // A rank's turn stands for no slowdown of its own (IsATurn).
  Diagnosis without_turns = *diagnosis;
  std::erase_if(without_turns.findings, [&](const Finding& f) { return IsATurn(f, grown); });
  const CoresNow cores = ReadCoresNow(now);
  const double slowdown_ms = SlowdownToHoldTo(diff, without_turns, options, cores);
  if (slowdown_ms <= 0) return;
  // Every rank's loader named already is this cause, whatever it explains.
  if (std::any_of(diagnosis->findings.begin(), diagnosis->findings.end(), [](const Finding& f) {
        return f.scope == FindingScope::kGlobal && f.category == FindingCategory::kDataloader && !f.standing;
      })) {
    return;
  }
  std::vector<double> busy, deltas, compute;
  for (const Grown& g : grown) {
    busy.push_back(g.now->cpu->host_busy);
    deltas.push_back(g.grown_ms);
    compute.push_back(CategoryMsPerIter(*g.now, Category::kCompute) - CategoryMsPerIter(*g.base, Category::kCompute));
  }
  const double busy_share = MedianInPlace(busy);
  if (busy_share < kBusyCoresShare) return;  // an idle core gave the workers their time
  // What they took from training: the CPU they added on a node, over its cores (a rank without a
  // host name is a node of its own).
  std::map<std::string, std::pair<double, double>> nodes;  // host: added ms, cores
  for (const Grown& g : grown) {
    auto& [added_ms, cores] = nodes[g.now->host.empty() ? fmt::format("rank {}", g.now->rank) : g.now->host];
    added_ms += g.grown_ms;
    cores = std::max(1.0, static_cast<double>(g.now->cpu->cpus));
  }
  double taken_ms = 0;
  for (const auto& [host, node] : nodes) taken_ms = std::max(taken_ms, node.first / node.second);
  if (taken_ms < options.min_slowdown_share * StepMs(diff)) return;  // less than a slowdown's worth
  // Where their added CPU goes: a frame most of the ranks list among their workers' hottest where
  // their baseline did not (what the workers do now and did not then). Not one hot at the
  // baseline too: the work that grew is spread over a loop's lines, and its listed two frames a
  // rank can leave the old decode on top (a session of the audio job: its stft line on 3 ranks).
  std::map<std::string, std::pair<size_t, size_t>> frames;  // location: ranks listing it new, listing it
  for (const Grown& g : grown) {
    for (const HotFrame& frame : g.now->loader_worker_frames) {
      auto& [fresh, listed] = frames[frame.location];
      ++listed;
      fresh += std::none_of(g.base->loader_worker_frames.begin(), g.base->loader_worker_frames.end(),
                            [&](const HotFrame& old) { return old.location == frame.location; });
    }
  }
  Finding f;
  f.from_baseline = true;
  f.scope = FindingScope::kGlobal;
  f.category = FindingCategory::kDataloader;
  for (const Grown& g : grown) f.workers.push_back(g.now->rank);
  std::sort(f.workers.begin(), f.workers.end());
  f.function = LoaderFunction(*grown.front().now);
  if (f.function.empty()) f.function = "(DataLoader worker processes)";
  auto hottest =
      std::max_element(frames.begin(), frames.end(), [](const auto& a, const auto& b) { return a.second < b.second; });
  if (hottest != frames.end() && 2 * hottest->second.first > grown.size()) f.location = hottest->first;
  f.impact_s_per_iter = std::min(taken_ms, slowdown_ms) / 1e3;
  f.beta = diff.now.iteration_ms > 0 ? std::min(taken_ms, slowdown_ms) / diff.now.iteration_ms : 0;
  std::vector<double> base_ms, now_ms;
  for (const Grown& g : grown) {
    base_ms.push_back(LoaderCpuMs(*g.base));
    now_ms.push_back(LoaderCpuMs(*g.now));
  }
  f.evidence = fmt::format(
      "against the baseline: the DataLoader workers of {} of the {} ranks read at both times use {:.1f} ms of CPU per "
      "iteration (median), {:.1f} ms at the baseline ({:+.1f}); their nodes' cores were busy {:.0f}% of the window, so "
      "that time came from the training threads, whose compute grew {:+.1f} ms/iter (median): {:.1f} ms/iter of the "
      "{:.1f} ms/iter slowdown on the busiest node's cores {}",
      grown.size(), read, MedianInPlace(now_ms), MedianInPlace(base_ms), MedianInPlace(deltas), 100 * busy_share,
      MedianInPlace(compute), std::min(taken_ms, slowdown_ms), slowdown_ms, SlowdownSource(diff, options, slowdown_ms));
  f.action = fmt::format(
      "Every rank's DataLoader workers do more work per batch than at the baseline{} on cores the training needs: make "
      "that work cheaper (cache decoded samples, move augmentation to the accelerator) or give the workers cores of "
      "their own (fewer workers, CPU affinity).",
      f.location.empty() ? "" : fmt::format(" (their hottest code: {})", f.location));
  FoldSlowerOpsInto(diagnosis, &f, cores);
  std::erase_if(diagnosis->findings, [&](const Finding& turn) {
    if (!IsATurn(turn, grown)) return false;
    const GrowthAgainstOthers growth = GrowthOf(grown, turn.workers.front());
    f.evidence += fmt::format(
        "; rank {} waited longest for its batches in this window ({:.1f} ms/iter over its peers), its workers' CPU "
        "grown {:+.1f} ms/iter against the others' {:+.1f} (median), more of it shared than its own: its turn, as "
        "prefetching workers that share the cores fall behind",
        turn.workers.front(), turn.impact_s_per_iter * 1e3, growth.mine, growth.others);
    return true;
  });
  InsertUnexplainedCause(diagnosis, std::move(f), cores);
}

}  // namespace eroica
