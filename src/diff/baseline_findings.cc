#include "diff/baseline_findings.h"

#include <fmt/core.h>

#include <algorithm>
#include <cmath>
#include <optional>
#include <string>
#include <unordered_map>

#include "base/robust_stats.h"
#include "diff/diff_report.h"
#include "localize/cpu_contention.h"
#include "localize/expectations.h"
#include "summary/function_name.h"

namespace eroica {
namespace {

bool OnAlmostAll(const PatternChange& c, const BaselineOptions& options) {
  int may_miss = static_cast<int>(std::floor(c.role_workers * options.missing_share));
  return static_cast<int>(c.ranks.size()) >= c.role_workers - may_miss;
}

// It runs more often than at the baseline: more work, not slower work.
bool MoreCalls(const PatternChange& c) {
  return c.base_calls_per_iter > 0 && c.now_calls_per_iter > c.base_calls_per_iter * 1.1;
}

// Collective calls the baseline did not make, at least one every other iteration. A new one is
// called in every iteration by construction (pattern_diff's Persists); more calls of one that
// ran before must add that many: a periodic collective newly inside the window (1 -> 1.2 calls an
// iteration, a metric every 5 steps) is the window's chance.
inline constexpr double kAddedCollectiveCallsPerIter = 0.5;

// Every rank runs collectives it did not run at the baseline: communication the job's code
// added (metrics gathered each step, an extra synchronization), whatever each call waits for. A
// rank waits longer at a collective it always ran for a slow network, a late or descheduled
// peer; a call it never made before is none of those. An unseen 5-rank distillation job whose
// every rank all-gathered 30 scalars a step went 161 -> 283 ms a step, its new allgather 124 ms
// of it, and read `healthy` but for the Python between the calls: on 2 busy cores the ranks
// queued for a CPU at every collective, so the new calls were read as such waits.
bool MoreCollectiveCalls(const PatternChange& c) {
  if (c.category != Category::kCommunication || !c.grew()) return false;
  if (c.kind != ChangeKind::kAppeared && !MoreCalls(c)) return false;
  const double base = c.kind == ChangeKind::kAppeared ? 0.0 : c.base_calls_per_iter;
  return c.now_calls_per_iter - base >= kAddedCollectiveCallsPerIter;
}

std::string WhatGrew(const PatternChange& c, const DiffSide& base) {
  std::string who = static_cast<int>(c.ranks.size()) == c.role_workers
                        ? "every rank's"
                        : fmt::format("{} of {} ranks'", c.ranks.size(), c.role_workers);
  if (c.kind == ChangeKind::kAppeared) {
    return fmt::format("{} {} owns {:.1f} ms per iteration, absent at the baseline{}", who, c.function,
                       c.now_ms_per_iter, StepsText(base));
  }
  // Longer calls first; else more of them (an evaluation pass added calls 37x as many, each
  // shorter: "takes 0.55 ms per call, 1.89 ms at the baseline" read as if it had sped up).
  if (c.base_ms_per_call > 0 && c.now_ms_per_call > c.base_ms_per_call * 1.1) {
    return fmt::format("{} {} takes {:.2f} ms per call, {:.2f} ms at the baseline{}", who, c.function,
                       c.now_ms_per_call, c.base_ms_per_call, StepsText(base));
  }
  if (MoreCalls(c)) {
    return fmt::format("{} {} runs {:.1f} calls per iteration, {:.1f} at the baseline{}", who, c.function,
                       c.now_calls_per_iter, c.base_calls_per_iter, StepsText(base));
  }
  return fmt::format("{} {} owns {:.1f} ms per iteration, {:.1f} ms at the baseline{}", who, c.function,
                     c.now_ms_per_iter, c.base_ms_per_iter, StepsText(base));
}

// "Every rank calls" or "N of M ranks call", for an action about a change's ranks.
std::string WhoCalls(const PatternChange& c) {
  return static_cast<int>(c.ranks.size()) == c.role_workers
             ? std::string("Every rank calls")
             : fmt::format("{} of {} ranks call", c.ranks.size(), c.role_workers);
}

// `collectives_waited_for_cpu`: the window's analysis read its collectives' waits as waits for
// descheduled peers (Diagnosis::collectives_waited_for_cpu).
Finding GlobalFinding(const PatternChange& c, const PatternDiff& diff, double slowdown_ms,
                      bool collectives_waited_for_cpu) {
  Finding f;
  f.from_baseline = true;
  f.scope = FindingScope::kGlobal;
  f.category = FindingCategoryOf(c.category);
  f.workers = c.ranks;
  f.function = c.function;
  double explained_ms = std::min(c.delta_ms_per_iter, slowdown_ms);
  f.impact_s_per_iter = explained_ms / 1e3;
  f.beta = diff.now.iteration_ms > 0 ? c.now_ms_per_iter / diff.now.iteration_ms : 0;
  f.peer_beta = diff.base.iteration_ms > 0 ? c.base_ms_per_iter / diff.base.iteration_ms : 0;
  f.evidence = fmt::format(
      "against the baseline: {}; {:+.1f} ms/iter, {:.0f}% of the {:.1f} ms/iter slowdown "
      "(iteration {:.1f} ms at the baseline, {:.1f} ms now)",
      WhatGrew(c, diff.base), c.delta_ms_per_iter, 100 * explained_ms / slowdown_ms, slowdown_ms,
      diff.base.iteration_ms, diff.now.iteration_ms);
  if (MoreCollectiveCalls(c)) {
    if (collectives_waited_for_cpu) {
      f.evidence +=
          "; the window's collectives also waited for descheduled peers (above), but the baseline never made these "
          "calls: without them there would be no such wait";
    }
    // No call count for a new one: a collective is recorded both where it is issued and where its
    // backend runs it (c10d::allgather_ and gloo:all_gather), which share one name.
    f.action = fmt::format(
        "{} {} {}: the job communicates more than it did. Find the added collective in its code (metrics "
        "gathered every step, an added synchronization); gather them into one call, or run it less often.",
        WhoCalls(c), c.function,
        c.kind == ChangeKind::kAppeared ? std::string("in every iteration, which it did not at the baseline")
                                        : fmt::format("{:.1f}x as often per iteration as at the baseline",
                                                      c.now_calls_per_iter / c.base_calls_per_iter));
    return f;
  }
  f.action = MoreCalls(c) && c.now_ms_per_call <= c.base_ms_per_call * 1.1
                 ? fmt::format(
                       "{} {} {:.1f}x as often per iteration as at the baseline, each call no slower: the "
                       "job does more work than it did. Look at what changed in its code or data.",
                       WhoCalls(c), c.function, c.now_calls_per_iter / c.base_calls_per_iter)
                 : AdviceFor(f.category, FindingScope::kGlobal, -1) +
                       " Every rank changed alike since the baseline: look at what changed for all of them "
                       "(container image, drivers, clocks, data, code).";
  return f;
}

// Time a training thread spent queued for a CPU after a collective (program_points.h): it grows
// when the node's cores got busier, never with the job's code, so it is no cause of its own.
bool QueuedForACpu(const PatternChange& c) { return IsResumePoint(c.function); }

// What such queueing that grew on almost every worker says, or "": a healthy control run in CI
// slowed 27.8 -> 53.3 ms a step while other tests took the cores, every rank's "(resuming after
// barrier)" absent at the baseline and 41.3 ms a step then, which read as Python to move out of
// the step.
std::string QueueingNote(const PatternDiff& diff, double slowdown_ms, const BaselineOptions& options) {
  double grown_ms = 0;
  std::vector<int> ranks;
  for (const PatternChange& c : diff.functions) {
    if (!c.grew() || !QueuedForACpu(c) || !OnAlmostAll(c, options)) continue;
    grown_ms += c.delta_ms_per_iter;
    if (ranks.empty()) ranks = c.ranks;
  }
  if (grown_ms <= 0 || grown_ms < options.explains_share * slowdown_ms) return "";
  return fmt::format(
      "against the baseline: the training threads of {} wait {:+.1f} ms/iter longer for a CPU after their "
      "collectives ({:.0f}% of the slowdown): the node's cores are busier than at the baseline (other processes, "
      "more threads), not the job's code",
      RanksText(ranks), grown_ms, 100 * std::min(1.0, grown_ms / slowdown_ms));
}

// A local finding's own function grew on its ranks since the baseline: say so, it confirms it.
void ConfirmLocal(const PatternDiff& diff, Finding* local) {
  for (const PatternChange& c : diff.functions) {
    if (!c.grew() || c.function != local->function || local->workers.empty()) continue;
    if (std::find(c.ranks.begin(), c.ranks.end(), local->workers.front()) == c.ranks.end()) continue;
    local->evidence += fmt::format("; against the baseline its {} grew {:+.1f} ms/iter on {}", c.function,
                                   c.largest_delta_ms_per_iter, RanksText(c.ranks));
    return;
  }
}

// A global finding that every rank's ops got slower since the baseline (ApplyBaseline's), not
// one of new code on every rank (new_code_lines.h), which says what they ran.
bool SlowerOpsSinceTheBaseline(const Finding& f) {
  return f.scope == FindingScope::kGlobal &&
         (f.category == FindingCategory::kCompute || f.category == FindingCategory::kMemory) && f.from_baseline &&
         f.evidence.find(kNewCodeEvidence) == std::string::npos;
}

// A rank named by its ops' speed against its peers' (a slower processor, or more work read from
// its ops' call times). On busy shared cores which rank's ops the others' extra CPU slows most is
// the node's contention: 3- and 4-rank audio sessions whose every rank's loader workers took the
// cores had one rank's batch-sized ops 1.8-1.9x its peers' at the median (its model-sized ones
// 1.2-1.4x) and were named `imbalance`.
bool RankNamedByItsOpsSpeed(const Finding& f, const CoresNow& cores) {
  return f.scope == FindingScope::kLocal &&
         (f.category == FindingCategory::kCompute || f.category == FindingCategory::kImbalance) &&
         !(f.workers.size() == 1 && cores.held_by_quota.contains(f.workers.front()));
}

// What rules against the baseline read past on busy cores: what the cores taken may have caused.
bool MayBeASymptom(const Finding& f, const CoresNow& cores) {
  return cores.busy && (SlowerOpsSinceTheBaseline(f) || RankNamedByItsOpsSpeed(f, cores));
}

}  // namespace

double UnexplainedSlowdownMs(const PatternDiff& diff, const Diagnosis& diagnosis, const BaselineOptions& options,
                             const CoresNow& cores) {
  double slowdown_ms = diff.now.iteration_ms - diff.base.iteration_ms;
  const double floor_ms = options.min_slowdown_share * diff.base.iteration_ms;
  if (slowdown_ms <= floor_ms) slowdown_ms = 0;
  slowdown_ms = std::max(slowdown_ms, options.detected_slowdown_ms);
  if (slowdown_ms <= 0) return 0;
  // Processes outside the job that came to hold its node stretch every rank's work, which no
  // comparison with the baseline can then tell from a cause of the job's own.
  if (options.neighbour) return 0;
  double explained_ms = 0;  // by the findings that measured what they cost
  for (const Finding& f : diagnosis.findings) {
    if (f.standing) continue;  // the baseline had it too (standing_costs.h)
    if (MayBeASymptom(f, cores)) continue;
    if (f.category == FindingCategory::kHang) return 0;
    const bool window_global = f.scope == FindingScope::kGlobal && !f.from_baseline;
    if (window_global && options.window_globals_stand_for_it) return 0;
    explained_ms += f.impact_s_per_iter * 1e3;
  }
  // What they leave is a cause of its own only where it would be a slowdown by itself.
  const double left_ms = slowdown_ms - explained_ms;
  return left_ms > floor_ms ? left_ms : 0;
}

std::string StepsText(const DiffSide& side) {
  if (side.first_step < 0) return "";
  return side.first_step == side.last_step ? fmt::format(" (iteration {})", side.first_step)
                                           : fmt::format(" (iterations {}-{})", side.first_step, side.last_step);
}

double StepMs(const PatternDiff& diff) {
  if (diff.base.iteration_ms <= 0) return diff.now.iteration_ms;
  if (diff.now.iteration_ms <= 0) return diff.base.iteration_ms;
  return std::min(diff.base.iteration_ms, diff.now.iteration_ms);
}

std::string SlowdownSource(const PatternDiff& diff, const BaselineOptions& options, double slowdown_ms) {
  // What other findings explained is not this cause's (UnexplainedSlowdownMs): say of how much.
  const double whole_ms = std::max(diff.now.iteration_ms - diff.base.iteration_ms, options.detected_slowdown_ms);
  std::string text = whole_ms > slowdown_ms + 0.05
                         ? fmt::format("(what the other findings leave of a {:.1f} ms/iter slowdown; ", whole_ms)
                         : std::string("(");
  text +=
      fmt::format("iteration {:.1f} ms at the baseline, {:.1f} ms now", diff.base.iteration_ms, diff.now.iteration_ms);
  if (options.detected_slowdown_ms > 0 && options.detected_slowdown_ms >= slowdown_ms) {
    text += fmt::format(" in profiled windows; unprofiled, the detector's window ran {:.1f} ms/iter above its best)",
                        options.detected_slowdown_ms);
  } else {
    text += ")";
  }
  return text;
}

CoresNow ReadCoresNow(const std::vector<WorkerPattern>& now) {
  CoresNow cores;
  std::vector<double> busy;
  const Expectations defaults;
  for (const WorkerPattern& w : now) {
    if (!w.cpu) continue;
    busy.push_back(w.cpu->host_busy);
    if (HeldBackByQuota(w.cpu, defaults)) cores.held_by_quota.insert(w.rank);
  }
  cores.busy = 2 * busy.size() > now.size() && MedianInPlace(busy) >= kBusyCoresShare;
  return cores;
}

void InsertUnexplainedCause(Diagnosis* diagnosis, Finding cause, const CoresNow& cores) {
  auto at = std::find_if(diagnosis->findings.begin(), diagnosis->findings.end(), [&](const Finding& f) {
    return f.standing || MayBeASymptom(f, cores) || f.impact_s_per_iter < cause.impact_s_per_iter;
  });
  diagnosis->findings.insert(at, std::move(cause));
}

namespace {

// A folded "every rank's ops got slower" finding, as a clause of its cause's evidence: its
// category, function and evidence (without the words every baseline finding's evidence opens with).
std::string SlowerOpsClause(const Finding& slower) {
  std::string_view evidence = slower.evidence;
  constexpr std::string_view kOpening = "against the baseline: ";
  if (evidence.starts_with(kOpening)) evidence.remove_prefix(kOpening.size());
  return fmt::format("{} {}: {}", Name(slower.category), slower.function, evidence);
}

}  // namespace

void FoldSlowerOpsInto(Diagnosis* diagnosis, Finding* cause, const CoresNow& cores) {
  for (Finding& f : diagnosis->findings) {
    if (!RankNamedByItsOpsSpeed(f, cores)) continue;
    f.evidence += fmt::format(
        "; read with care: every rank's {} took the busy cores meanwhile, and which rank's ops that slows most is "
        "the node's contention",
        cause->category == FindingCategory::kDataloader ? "DataLoader workers" : "new code");
  }
  std::erase_if(diagnosis->findings, [&](const Finding& f) {
    if (!SlowerOpsSinceTheBaseline(f)) return false;
    cause->evidence +=
        fmt::format("; every rank's ops ran slower beside it on the cores it took ({})", SlowerOpsClause(f));
    return true;
  });
}

void FoldSlowerOpsIntoTakenCores(const std::vector<WorkerPattern>& now, Diagnosis* diagnosis) {
  if (!ReadCoresNow(now).busy) return;
  double taken_s = 0;
  std::optional<size_t> taker;  // the finding whose processes took the most
  for (size_t i = 0; i < diagnosis->findings.size(); ++i) {
    const Finding& f = diagnosis->findings[i];
    if (f.standing || f.from_baseline || f.cores_taken_s_per_iter <= 0) continue;
    taken_s += f.cores_taken_s_per_iter;
    if (!taker || f.cores_taken_s_per_iter > diagnosis->findings[*taker].cores_taken_s_per_iter) taker = i;
  }
  if (!taker) return;
  // Never the cause itself, a window's own finding (not SlowerOpsSinceTheBaseline).
  FoldSlowerOpsCostingNoMoreThan(diagnosis, &diagnosis->findings[*taker], taken_s);
}

void FoldSlowerOpsCostingNoMoreThan(Diagnosis* diagnosis, Finding* cause, double taken_s) {
  auto symptom = [&](const Finding& f) { return SlowerOpsSinceTheBaseline(f) && f.impact_s_per_iter <= taken_s; };
  // Every clause is written before any finding is erased: `cause` may be one of the findings.
  for (const Finding& f : diagnosis->findings) {
    if (!symptom(f)) continue;
    cause->evidence += fmt::format(
        "; every rank's ops ran slower beside it on the cores its processes took, {:.1f} ms/iter of the {:.1f} they "
        "took ({})",
        1e3 * f.impact_s_per_iter, 1e3 * taken_s, SlowerOpsClause(f));
  }
  std::erase_if(diagnosis->findings, symptom);
}

std::vector<RankPair> PairsByRank(const std::vector<WorkerPattern>& base, const std::vector<WorkerPattern>& now) {
  std::unordered_map<int, const WorkerPattern*> base_by_rank;
  for (const WorkerPattern& w : base) base_by_rank.emplace(w.rank, &w);
  std::vector<RankPair> pairs;
  for (const WorkerPattern& w : now) {
    if (auto b = base_by_rank.find(w.rank); b != base_by_rank.end()) pairs.push_back({b->second, &w});
  }
  return pairs;
}

bool AlmostAll(size_t n, size_t workers, const BaselineOptions& options) {
  const auto may_miss = static_cast<size_t>(std::floor(static_cast<double>(workers) * options.missing_share));
  return n >= 2 && n + may_miss >= workers;
}

namespace {

// Adds a global finding made against the baseline, merged with the window's own of the same
// category and function, after the findings that go ahead of it.
void InsertGlobal(Finding global, double slowdown_ms, const BaselineOptions& options, Diagnosis* d) {
  // An expected box or the peers found it too (per group of like workers): one finding, both
  // reasons. Program points count as the same when both are one: their names shift with the ops.
  bool merged = false;
  auto same_function = [&](const std::string& a, const std::string& b) {
    return a == b || (IsProgramPoint(a) && IsProgramPoint(b));
  };
  std::erase_if(d->findings, [&](const Finding& f) {
    if (f.standing || f.scope != FindingScope::kGlobal || f.category != global.category ||
        !same_function(f.function, global.function)) {
      return false;
    }
    if (!merged) {
      global.evidence += "; " + f.evidence;
      // Its evidence already says where the samples put the time: the location goes with it, or
      // locating the merged finding again would say it twice.
      global.location = f.location;
    }
    merged = true;
    global.impact_s_per_iter = std::max(global.impact_s_per_iter, f.impact_s_per_iter);
    return true;
  });
  // Hangs stay ahead of it, local findings that explain the slowdown where every rank's slower
  // ops, memory or collectives may be their symptom (a rank's own work takes the shared cores,
  // the others wait for it), and local findings that cost as much: the diagnosis reads most
  // costly first. A cost of every rank's own code (host, loader) that costs more goes first: an
  // unseen 5-rank LSTM job whose every rank ran gc.collect() each step and whose rank 3 had
  // reviews 1.6x as long listed the imbalance (123 ms a step) above the collections (136 ms). One
  // that costs less goes after, whether or not the local finding explains half the slowdown: an
  // unseen 4-rank graph network whose every rank logged metrics record by record (56 ms a step)
  // and whose rank 3 had graphs 1.7x as large (88 ms, of a 197 ms slowdown) listed the logging first.
  const bool may_be_symptom = global.category == FindingCategory::kCompute ||
                              global.category == FindingCategory::kMemory ||
                              global.category == FindingCategory::kCommunication;
  auto ahead = [&](const Finding& f) {
    if (f.category == FindingCategory::kHang) return true;
    if (f.standing || f.scope != FindingScope::kLocal) return false;
    bool explains = f.impact_s_per_iter * 1e3 >= options.explains_share * slowdown_ms;
    return (may_be_symptom && explains) || f.impact_s_per_iter >= global.impact_s_per_iter;
  };
  auto last_ahead = std::find_if(d->findings.rbegin(), d->findings.rend(), ahead);
  d->findings.insert(last_ahead.base(), std::move(global));
}

}  // namespace

void ApplyBaseline(const PatternDiff& diff, Diagnosis* d, const BaselineOptions& options) {
  const double slowdown_ms = diff.now.iteration_ms - diff.base.iteration_ms;
  d->notes.push_back(fmt::format("against the baseline{}: iteration {:.1f} ms then, {:.1f} ms now ({:+.1f}%)",
                                 StepsText(diff.base), diff.base.iteration_ms, diff.now.iteration_ms,
                                 diff.base.iteration_ms > 0 ? 100 * slowdown_ms / diff.base.iteration_ms : 0.0));
  for (const std::string& note : diff.notes) d->notes.push_back("against the baseline: " + note);
  for (Finding& f : d->findings) {
    if (f.scope == FindingScope::kLocal) ConfirmLocal(diff, &f);
  }
  if (slowdown_ms <= options.min_slowdown_share * diff.base.iteration_ms) return;
  if (std::string note = QueueingNote(diff, slowdown_ms, options); !note.empty()) d->notes.push_back(note);
  if (options.neighbour) {
    d->notes.push_back(NeighbourGrowthNote(*options.neighbour));
    d->slowed_by = NeighbourSlowedBy(*options.neighbour,
                                     diff.base.iteration_ms > 0 ? 100 * slowdown_ms / diff.base.iteration_ms : 0.0);
  }
  // The functions are sorted own work first, largest change first: the first grown one on almost
  // every worker is the cause; the others' longer waits are its symptom. A function may also
  // stand for its category when that category grew on almost every worker and the function on
  // most of them (a Python program point can be named differently on a rank), or, with no such
  // function, when the category's growth alone explains the slowdown.
  const PatternChange* category_wide = nullptr;
  auto wide = [&](const PatternChange& c) {
    if (!c.grew() || QueuedForACpu(c) || c.ranks.size() * 2 <= static_cast<size_t>(c.role_workers)) return false;
    for (const PatternChange& total : diff.categories) {
      if (total.grew() && total.role == c.role && total.category == c.category && OnAlmostAll(total, options)) {
        category_wide = &total;
        return true;
      }
    }
    return false;
  };
  auto cause = std::find_if(diff.functions.begin(), diff.functions.end(), [&](const PatternChange& c) {
    return c.grew() && !QueuedForACpu(c) && OnAlmostAll(c, options);
  });
  if (cause == diff.functions.end()) cause = std::find_if(diff.functions.begin(), diff.functions.end(), wide);
  if (cause == diff.functions.end()) {
    // No one function on most workers, but a category of own work grew on almost all of them by
    // enough to explain the slowdown: the same cost under different names (a Python program
    // point is named by the ops around it, which differ between ranks). Its largest grown
    // function names it. Waiting (communication) is the others' symptom, never such a cause, nor
    // is the time queued for a CPU in it.
    for (const PatternChange& total : diff.categories) {
      double queued_ms = 0;
      for (const PatternChange& c : diff.functions) {
        if (c.grew() && QueuedForACpu(c) && c.role == total.role && c.category == total.category) {
          queued_ms += c.delta_ms_per_iter;
        }
      }
      if (!total.grew() || total.category == Category::kCommunication || !OnAlmostAll(total, options) ||
          total.delta_ms_per_iter - queued_ms < options.explains_share * slowdown_ms) {
        continue;
      }
      cause = std::find_if(diff.functions.begin(), diff.functions.end(), [&](const PatternChange& c) {
        return c.grew() && !QueuedForACpu(c) && c.role == total.role && c.category == total.category;
      });
      if (cause != diff.functions.end()) {
        category_wide = &total;
        break;
      }
    }
  }
  // Collectives added on almost every worker are a cause of their own beside any grown own work,
  // which comes first in the order and would otherwise read them as its symptom.
  auto added = std::find_if(diff.functions.begin(), diff.functions.end(),
                            [&](const PatternChange& c) { return MoreCollectiveCalls(c) && OnAlmostAll(c, options); });
  if (added != diff.functions.end() && added != cause) {
    InsertGlobal(GlobalFinding(*added, diff, slowdown_ms, d->collectives_waited_for_cpu), slowdown_ms, options, d);
  }
  if (cause == diff.functions.end()) return;
  // Collectives grown by waiting, not by moving data: each recorded call's shortest duration, the
  // last arrival's (the transfer itself), grew by less than half of what the calls grew on
  // average. The ranks waited longer for late ranks (the window's own analysis names those); the
  // network is as fast as it was. An unseen 6-rank tensor-parallel job whose rank 1 was throttled
  // and rank 2's loader slow read `global communication` first: its recorded allreduces 5.48 ->
  // 24.33 ms, the shortest of each 1.46 -> 1.69 ms (0.012 of the growth). Over every grown
  // collective of that stop's fault sessions against their baselines (43), the shortest grew
  // -0.084 to 0.197 of what the calls grew; every rank's link throttled (tbf, two runs): 1.03, 1.04.
  // None of the three below reads collectives the baseline did not call (MoreCollectiveCalls).
  const bool added_collectives = MoreCollectiveCalls(*cause);
  const CollectiveCalls& then = cause->base_calls;
  const CollectiveCalls& now = cause->now_calls;
  if (cause->category == Category::kCommunication && !added_collectives && then.known() && now.known() &&
      now.shortest_ms - then.shortest_ms < 0.5 * (now.mean_ms - then.mean_ms)) {
    d->notes.push_back(fmt::format(
        "against the baseline: {}, {:+.1f} ms/iter, by waiting: its calls took {:.2f} ms then, {:.2f} ms now, the "
        "shortest of each (the last rank to arrive, the transfer itself) {:.2f} ms then, {:.2f} ms now: the ranks "
        "waited longer for each other, the network moved the data as fast",
        WhatGrew(*cause, diff.base), cause->delta_ms_per_iter, then.mean_ms, now.mean_ms, then.shortest_ms,
        now.shortest_ms));
    return;
  }
  // The peers' analysis found this window's collectives waiting for descheduled peers (the nodes'
  // cores busy, the ranks queued for a CPU longer than they waited): a collective grown since the
  // baseline on every rank is that same wait, not the network. A healthy control run in CI went
  // 21.2 -> 44.3 ms a step while other tests took the cores, every rank's allreduce 3.74 -> 12.59
  // ms a call, and was named `global communication` against the baseline.
  if (cause->category == Category::kCommunication && !added_collectives && d->collectives_waited_for_cpu) {
    d->notes.push_back(fmt::format(
        "against the baseline: {}, {:+.1f} ms/iter, but this window's collectives waited for descheduled peers "
        "(above): the node's cores are busier than at the baseline, not the network",
        WhatGrew(*cause, diff.base), cause->delta_ms_per_iter));
    return;
  }
  // Every rank's ops or collectives slower on a node a neighbour came to hold: its symptom.
  if (options.neighbour && !added_collectives &&
      (cause->category == Category::kCommunication || cause->category == Category::kCompute ||
       cause->category == Category::kMemory)) {
    d->notes.push_back(fmt::format(
        "against the baseline: {}, {:+.1f} ms/iter, on a node processes outside the job came to hold (above): "
        "waiting for the processors, not a cause of the job's",
        WhatGrew(*cause, diff.base), cause->delta_ms_per_iter));
    return;
  }
  Finding global = GlobalFinding(*cause, diff, slowdown_ms, d->collectives_waited_for_cpu);
  if (category_wide != nullptr && !OnAlmostAll(*cause, options)) {
    global.workers = category_wide->ranks;
    global.evidence +=
        fmt::format("; every rank's {} time grew {:+.1f} ms/iter ({})", CategoryName(category_wide->category),
                    category_wide->delta_ms_per_iter, RanksText(category_wide->ranks));
  }
  InsertGlobal(std::move(global), slowdown_ms, options, d);
}

}  // namespace eroica
