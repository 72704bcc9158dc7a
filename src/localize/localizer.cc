#include "localize/localizer.h"

#include <fmt/core.h>
#include <fmt/ranges.h>

#include <algorithm>

#include "base/rank_ranges.h"
#include "localize/across_roles.h"
#include "localize/cpu_contention.h"
#include "localize/finding_location.h"
#include "localize/global_analysis.h"
#include "localize/groups.h"
#include "localize/iteration_evidence.h"
#include "localize/link_analysis.h"
#include "localize/local_analysis.h"
#include "localize/own_ops.h"
#include "localize/stage_waits.h"
#include "localize/waited_half.h"

namespace eroica {
namespace {

constexpr size_t kMaxListedWarnings = 20;
constexpr size_t kMaxKeptWorkerWarnings = 1000;

void AddWarning(Diagnosis* d, std::string text, size_t* dropped) {
  if (d->warnings.size() < kMaxListedWarnings) {
    d->warnings.push_back(std::move(text));
  } else {
    ++*dropped;
  }
}

// Missing and duplicate ranks. A missing rank is itself a suspect: crashed or hung.
void CheckRanks(const LocalizeInput& input, const WorkerTable& table, Diagnosis* d, size_t* dropped) {
  int world_size = input.declared_world_size;
  std::vector<bool> seen;
  std::vector<int> duplicates;
  int out_of_range_rank = -1;
  for (size_t i = 0; i < table.size(); ++i) {
    const WorkerRow& w = table.row(i);
    world_size = std::max(world_size, w.world_size);
    if (w.rank < 0) continue;
    if (w.rank >= kMaxWorldSize) {
      out_of_range_rank = std::max(out_of_range_rank, w.rank);
      continue;
    }
    if (static_cast<size_t>(w.rank) >= seen.size()) seen.resize(static_cast<size_t>(w.rank) + 1, false);
    if (seen[static_cast<size_t>(w.rank)] && duplicates.size() < 64) duplicates.push_back(w.rank);
    seen[static_cast<size_t>(w.rank)] = true;
  }
  for (const StackDump& s : input.stacks) world_size = std::max(world_size, s.world_size);
  if (world_size > kMaxWorldSize) {
    AddWarning(d,
               fmt::format("a world size of {} is declared, above the {} eroica believes; "
                           "missing ranks are counted up to {} only",
                           world_size, kMaxWorldSize, kMaxWorldSize),
               dropped);
    world_size = kMaxWorldSize;
  }
  if (out_of_range_rank >= 0) {
    AddWarning(d,
               fmt::format("rank {} is above the largest world size eroica believes ({}); "
                           "such ranks are not checked for gaps",
                           out_of_range_rank, kMaxWorldSize),
               dropped);
  }
  d->world_size = world_size;
  if (!duplicates.empty()) {
    AddWarning(d,
               fmt::format("rank(s) {} appear in more than one file; each file is diagnosed as its "
                           "own worker",
                           RankRanges(duplicates)),
               dropped);
  }
  if (world_size <= 0 || table.empty()) return;
  std::vector<int> missing;
  for (int r = 0; r < world_size; ++r) {
    if (static_cast<size_t>(r) >= seen.size() || !seen[static_cast<size_t>(r)]) missing.push_back(r);
  }
  if (!missing.empty()) {
    AddWarning(d,
               fmt::format("{} of {} ranks have no usable trace: {} (crashed or hung? they are "
                           "suspects themselves)",
                           missing.size(), world_size, RankRanges(missing)),
               dropped);
  }
}

bool MoreUrgent(const Finding& a, const Finding& b) {
  bool a_hang = a.category == FindingCategory::kHang, b_hang = b.category == FindingCategory::kHang;
  if (a_hang != b_hang) return a_hang;
  return a.impact_s_per_iter > b.impact_s_per_iter;
}

// Whether a local loader finding is one rank's turn in a stall every rank's loader has: its
// DataLoader workers slept in their own work (a read, a decode, a remote fetch: loader_work.h),
// and no longer than its peers' (LoaderSleptBeyondPeers, by the noise floor). Ranks whose
// workers prefetch stall in turns, and the others wait for whichever ran dry; a rank whose own
// loader is slower sleeps longer in it. A fresh 4-rank MLP whose every worker waited 5 ms per
// sample (seed 1200): every rank's workers asleep 1.43-1.63 s per second, rank 1 waiting 0.37 of
// its step for batches against 0.13-0.19, its workers asleep 0.13 less than its peers'.
// `beyond`: LoaderSleptBeyondPeers(group), read once for all findings.
bool LoaderTurnOfAStallEverywhere(const WorkerGroup& group, const Expectations& e,
                                  const std::vector<std::optional<double>>& beyond, const Finding& local) {
  if (local.category != FindingCategory::kDataloader || local.workers.size() != 1) return false;
  for (size_t k = 0; k < group.size(); ++k) {
    if (group.row(k).rank != local.workers.front()) continue;
    const std::optional<CpuShare>& cpu = group.row(k).cpu;
    return cpu && cpu->loader_asleep >= e.min_excess_beta && beyond[k] && *beyond[k] < e.min_excess_beta;
  }
  return false;
}

// A rank that is merely the worst of a problem every rank has (every rank in a Python hot loop,
// one of them a little slower on a loaded host) is part of the global finding, not a separate
// local one: same category and function, and its excess over its peers *at that function* no
// more than what the problem holds on every rank (`iteration_s` × its level), or for the loader,
// its turn in a stall every rank's loader has (LoaderTurnOfAStallEverywhere), whose wait the job
// pays as part of the global cost. A rank whose excess there is larger has a cause of its own on
// top, and both are reported: a CI run of 4 ranks that each slept 10 ms a step at one line, rank 3
// 80 ms, named only the 10 ms (β 0.12) on every rank. The excess is the function's, not the
// finding's whole own-work impact, which also holds whatever else the scheduler stretched on that
// rank: a clean-clone CI run of a loop of 20 % of the step on every rank had rank 1 +5.1 ms at
// the loop's point and +13.6 ms in all (its compute too), against the loop's β 0.146 of every
// rank's 86.5 ms step (12.6 ms), and named it `local host` ahead of the global cost.
//
// Except a rank whose training thread ran on a CPU longer than its peers' by half its excess
// there (and the noise floor): the scheduler gives a rank less processor, never more, so that
// excess is work of its own, not the problem's level stretched (OnCpuBeyondPeers). An unseen
// 4-rank recommender whose every rank built its batches in the training process (0.15-0.18 of
// a step, over the loader's box) and whose rank 3's bags were 4x as long: its loader 0.34 of
// the step, above every peer in each of 5 steps, +17 ms, its thread on a CPU 0.10 of the window
// longer than theirs; folded as "rank 3 is the worst" since its excess was under the level.
// Processor time alone is no proof of more work here (ranks of an audio job ran up to 0.16 of
// the window longer than their peers with the same work): it only keeps a rank that stood out by
// the tests above from being folded.
void FoldLocalIntoGlobal(const WorkerGroup& group, const Expectations& e, std::vector<Finding>* local,
                         std::vector<Finding>* global) {
  double iteration_s = MedianIterationS(group);
  bool loader = std::any_of(local->begin(), local->end(),
                            [](const Finding& l) { return l.category == FindingCategory::kDataloader; });
  std::vector<std::optional<double>> beyond;
  if (loader) beyond = LoaderSleptBeyondPeers(group);
  std::vector<std::optional<double>> on_cpu_beyond =
      local->empty() ? std::vector<std::optional<double>>{} : OnCpuBeyondPeers(group);
  auto worked_beyond_peers = [&](const Finding& l, double at_function_s) {
    if (l.workers.size() != 1 || iteration_s <= 0) return false;
    for (size_t k = 0; k < group.size(); ++k) {
      if (group.row(k).rank != l.workers.front() || !on_cpu_beyond[k]) continue;
      return *on_cpu_beyond[k] >= std::max(e.min_excess_beta, 0.5 * at_function_s / iteration_s);
    }
    return false;
  };
  std::erase_if(*local, [&](const Finding& l) {
    for (Finding& g : *global) {
      if (g.category != l.category || g.function != l.function) continue;
      double at_function_s = l.beta > 0 ? std::max(0.0, l.beta - l.peer_beta) * iteration_s : l.impact_s_per_iter;
      if (at_function_s <= g.beta * iteration_s && !worked_beyond_peers(l, at_function_s)) {
        g.evidence += fmt::format("; rank {} is the worst (+{:.1f} ms per iteration over its peers there)",
                                  l.workers.front(), at_function_s * 1e3);
        return true;
      }
      if (loader && LoaderTurnOfAStallEverywhere(group, e, beyond, l)) {
        g.impact_s_per_iter = std::max(g.impact_s_per_iter, l.impact_s_per_iter);
        g.evidence += fmt::format(
            "; rank {} waited longest for its batches in this window (+{:.1f} ms per iteration over its peers), "
            "its workers asleep in their work no longer than its peers': ranks that prefetch stall in turns",
            l.workers.front(), l.impact_s_per_iter * 1e3);
        return true;
      }
    }
    return false;
  });
}

// Ranks the others waited for alike in every step (local_analysis.h RanksLateAlike), each given
// more work, are one line: data is sharded by replica, and the ranks of one replica get the same
// batches (two tensor-parallel ranks given longer sequences read `local imbalance [0] aten::mm;
// local imbalance [1] aten::addmm`, and a second fault of the run came third). The most costly
// names it; each rank's evidence follows. Not other kinds: two ranks under a CPU quota each, or two
// slower devices, are two things to fix.
void MergeRanksLateAlike(const WorkerGroup& group, const Expectations& e, std::vector<Finding>* local) {
  std::vector<bool> late = RanksLateAlike(group, e);
  std::vector<int> late_ranks;
  for (size_t k = 0; k < group.size(); ++k) {
    if (late[k]) late_ranks.push_back(group.row(k).rank);
  }
  auto alike = [&](const Finding& f) {
    return f.scope == FindingScope::kLocal && f.category == FindingCategory::kImbalance && f.workers.size() == 1 &&
           std::find(late_ranks.begin(), late_ranks.end(), f.workers.front()) != late_ranks.end();
  };
  if (std::count_if(local->begin(), local->end(), alike) < 2) return;
  auto first_other = std::stable_partition(local->begin(), local->end(), [&](const Finding& f) { return !alike(f); });
  std::vector<Finding> merged(std::make_move_iterator(first_other), std::make_move_iterator(local->end()));
  local->erase(first_other, local->end());
  std::stable_sort(merged.begin(), merged.end(),
                   [](const Finding& a, const Finding& b) { return a.impact_s_per_iter > b.impact_s_per_iter; });
  MergeFindingsOfOneCause(&merged, FindingScope::kLocal, "alike on each rank the others wait for in every step",
                          SameCause::kCategory);
  local->insert(local->end(), std::make_move_iterator(merged.begin()), std::make_move_iterator(merged.end()));
}

// A group's local findings: its stragglers (local_analysis.h), then what the processors, the
// loader workers, the ops only one rank calls and CPU quotas say about each.
std::vector<Finding> LocalFindings(const WorkerGroup& group, const Expectations& e, std::vector<std::string>* notes,
                                   std::optional<size_t> waited_across = std::nullopt) {
  std::vector<Finding> local = FindLocalProblems(group, e, waited_across);
  BlameBusyThreadsOfItsProcess(group, e, &local);
  ExcuseScheduledOut(group, e, &local, notes);
  BlameBusyLoaderWorkers(group, e, &local);
  NameOpsOnlyItCalls(group, e, &local);
  AddQuotaThrottled(group, e, &local);
  MergeRanksLateAlike(group, e, &local);
  return local;
}

// Whether every one of `members` runs the function a finding names.
bool EveryoneRuns(const WorkerTable& table, const std::vector<uint32_t>& members, const std::string& function) {
  return std::all_of(members.begin(), members.end(), [&](uint32_t m) {
    auto functions = table.functions(m);
    return std::any_of(functions.begin(), functions.end(),
                       [&](const FunctionEntry& f) { return table.name(f.name) == function; });
  });
}

// Where no rank of the group stands out but half of it waits for the other half
// (waited_half.h): each rank of the waited-for half compared with the waiting half, its findings
// that name it alone kept, one finding for a cause they share. Only at work the waiting half runs
// too: where one half has work the other never does (the tensor-parallel rank that loads and
// broadcasts each batch), that half is a role, its share of it no straggler's.
// At most kMaxLocalFindings ranks of a late half are compared one by one, the busiest by own work,
// the rest counted: each comparison holds the whole waiting half, and half of 20,000 ranks one by
// one is 10,000 analyses of 10,001 ranks.
std::vector<Finding> LocalFindingsOfAWaitedForHalf(const WorkerGroup& group, const Expectations& e,
                                                   std::vector<std::string>* notes) {
  std::optional<WaitingHalves> halves = SplitIntoWaitingHalves(group, e);
  if (!halves) return {};
  std::vector<uint32_t> late = halves->waited_for;
  const size_t not_compared = late.size() > kMaxLocalFindings ? late.size() - kMaxLocalFindings : 0;
  if (not_compared > 0) {
    auto busier = [&](uint32_t a, uint32_t b) {
      return OwnWorkBeta(group.table->row(a)) > OwnWorkBeta(group.table->row(b));
    };
    std::partial_sort(late.begin(), late.begin() + kMaxLocalFindings, late.end(), busier);
    late.resize(kMaxLocalFindings);
  }
  std::vector<Finding> found;
  for (uint32_t member : late) {
    int rank = group.table->row(member).rank;
    for (Finding& f : LocalFindings(WithTheWaitingHalf(group, *halves, member), e, notes)) {
      if (f.scope == FindingScope::kLocal && f.workers == std::vector<int>{rank} &&
          EveryoneRuns(*group.table, halves->waiting, f.function)) {
        found.push_back(std::move(f));
      }
    }
  }
  if (found.empty()) return found;
  MergeFindingsOfOneCause(&found, FindingScope::kLocal, "alike on each rank the other half waits for");
  if (not_compared > 0) {
    found.front().evidence +=
        fmt::format("; {} more ranks of that half are waited for alike (the {} busiest compared one by one)",
                    not_compared, kMaxLocalFindings);
  }
  notes->push_back(halves->evidence);
  return found;
}

}  // namespace

void LocalizeInput::AddWorker(WorkerPattern&& worker, bool keep_pattern) {
  for (const std::string& warning : worker.warnings) {
    if (worker_warnings.size() < kMaxKeptWorkerWarnings) {
      worker_warnings.push_back(fmt::format("rank {}: {}", worker.rank, warning));
    }
  }
  table.Add(worker);
  if (keep_pattern) workers.push_back(std::move(worker));
}

Diagnosis Localize(const LocalizeInput& input, const Expectations& expectations) {
  // Callers that only kept full patterns get a table built here.
  const WorkerTable built = input.table.empty() ? WorkerTableOf(input.workers) : WorkerTable{};
  const WorkerTable& table = input.table.empty() ? built : input.table;
  Diagnosis d;
  // A hang session may have stacks but no traces: the ranks that dumped them are the workers.
  d.workers = static_cast<int>(std::max(table.size(), input.stacks.size()));
  size_t dropped = 0;
  for (const std::string& error : input.input_errors) AddWarning(&d, error, &dropped);
  CheckRanks(input, table, &d, &dropped);
  for (const std::string& warning : input.worker_warnings) AddWarning(&d, warning, &dropped);
  if (input.table.empty()) {
    for (const WorkerPattern& w : input.workers) {
      for (const std::string& warning : w.warnings)
        AddWarning(&d, fmt::format("rank {}: {}", w.rank, warning), &dropped);
    }
  }
  std::vector<Finding> hang = FindHang(input.stacks, d.world_size);
  d.findings.insert(d.findings.end(), hang.begin(), hang.end());

  std::vector<WorkerGroup> groups = GroupWorkers(table);
  if (groups.size() > 1) {
    std::vector<size_t> sizes;
    sizes.reserve(groups.size());
    for (const WorkerGroup& g : groups) sizes.push_back(g.size());
    d.notes.push_back(
        fmt::format("workers fall into {} groups of like roles (sizes {}); each is "
                    "compared only with itself",
                    groups.size(), fmt::join(sizes, ", ")));
  }
  std::vector<GroupFindings> by_group;
  by_group.reserve(groups.size());
  for (const WorkerGroup& group : groups) {
    if (group.size() < 2) {
      d.notes.push_back(
          fmt::format("rank {} has no peer with the same role: compared with expectations only", group.row(0).rank));
    }
    std::vector<Finding> local = LocalFindings(group, expectations, &d.notes);
    if (std::none_of(local.begin(), local.end(),
                     [](const Finding& f) { return f.category != FindingCategory::kCommunication; })) {
      std::vector<Finding> half = LocalFindingsOfAWaitedForHalf(group, expectations, &d.notes);
      local.insert(local.end(), half.begin(), half.end());
    }
    std::vector<Finding> links = FindDegradedLinks(group, expectations);
    bool straggler = std::any_of(local.begin(), local.end(),
                                 [](const Finding& f) { return f.category != FindingCategory::kCommunication; });
    std::vector<Finding> global =
        FindGlobalProblems(group, expectations, straggler, &d.notes, &d.collectives_waited_for_cpu);
    // A degraded link explains the group's slow collectives: not a global network problem.
    if (!links.empty()) {
      std::erase_if(global, [](const Finding& g) { return g.category == FindingCategory::kCommunication; });
      local.insert(local.end(), links.begin(), links.end());
    }
    FoldLocalIntoGlobal(group, expectations, &local, &global);
    by_group.push_back({&group, std::move(local), std::move(global)});
  }
  FoldWaitsForAnotherStage(&by_group);
  SeeWaitsForABusierStage(&by_group, expectations, &d.notes);
  for (GroupFindings& g : by_group) {
    d.findings.insert(d.findings.end(), g.local.begin(), g.local.end());
    d.findings.insert(d.findings.end(), g.global.begin(), g.global.end());
  }
  MergeGlobalFindingsAcrossRoles(&d.findings);
  LocateFindings(table, &d.findings);
  std::stable_sort(d.findings.begin(), d.findings.end(), MoreUrgent);
  if (dropped > 0) d.warnings.push_back(fmt::format("... and {} more warnings", dropped));
  return d;
}

std::vector<Finding> LocalFindingsWaitedAcross(const WorkerTable& table, int rank, const Expectations& expectations) {
  std::vector<Finding> local;
  for (const WorkerGroup& group : GroupWorkers(table)) {
    if (group.size() < 3) continue;
    for (size_t k = 0; k < group.size(); ++k) {
      if (group.row(k).rank != rank) continue;
      std::vector<std::string> notes;
      local = LocalFindings(group, expectations, &notes, k);
      LocateFindings(table, &local);
      return local;
    }
  }
  return local;
}

}  // namespace eroica
