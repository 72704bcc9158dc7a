#include "diff/new_code_lines.h"

#include <fmt/core.h>

#include <algorithm>
#include <array>
#include <cmath>
#include <map>
#include <string>
#include <unordered_map>
#include <unordered_set>

#include "base/robust_stats.h"
#include "localize/finding_kind.h"
#include "localize/own_code_line.h"
#include "summary/category.h"

namespace eroica {
namespace {

struct NewLine {
  size_t ranks_new = 0;  // ranks whose baseline never reached it while it holds the share now
  uint32_t depth = 0;
  std::vector<double> shares;
};

bool Listed(const WorkerPattern& w, const std::string& location) {
  return std::any_of(w.code_lines.begin(), w.code_lines.end(),
                     [&](const CodeFrame& line) { return line.location == location; });
}

// Whether the rank's code is where it was: most of the baseline's lines are still sampled now. A
// job restarted with edited code has its lines moved, and every line of it would look new.
bool SameCode(const WorkerPattern& base, const WorkerPattern& now) {
  size_t kept = std::count_if(base.code_lines.begin(), base.code_lines.end(),
                              [&](const CodeFrame& line) { return Listed(now, line.location); });
  return 2 * kept > base.code_lines.size();
}

constexpr std::array<Category, 4> kOwnWork = {Category::kCompute, Category::kMemory, Category::kDataloader,
                                              Category::kHost};

// Of `category`'s functions, the one whose time per iteration grew most on the ranks (median over
// them; absent on a side: 0), or "" where none grew: the diff's bars (which the cost may be under,
// split between names) need not hold for naming it.
std::string GrownMost(const std::vector<const RankPair*>& ranks, Category category) {
  std::map<std::string, std::vector<double>> grown;
  for (size_t k = 0; k < ranks.size(); ++k) {
    auto add = [&](const WorkerPattern& w, double sign) {
      for (const FunctionPattern& f : w.functions) {
        if (f.category != category) continue;
        std::vector<double>& deltas = grown[f.name];
        deltas.resize(ranks.size(), 0.0);
        deltas[k] += sign * f.beta * w.iteration_s * 1e3;
      }
    };
    add(*ranks[k]->now, 1.0);
    add(*ranks[k]->base, -1.0);
  }
  std::string best;
  double best_ms = 0;
  for (auto& [name, deltas] : grown) {
    deltas.resize(ranks.size(), 0.0);
    double median = MedianInPlace(deltas);
    if (median > best_ms) {
      best_ms = median;
      best = name;
    }
  }
  return best;
}

// Ranks with samples at both times whose code is where it was (and whose baseline's list of
// lines is not full: a line missing from a full list may have been sampled below its last).
std::vector<RankPair> SampledAtBothTimes(const std::vector<WorkerPattern>& base,
                                         const std::vector<WorkerPattern>& now) {
  std::vector<RankPair> sampled;
  for (const RankPair& p : PairsByRank(base, now)) {
    if (p.base->code_lines.empty() || p.now->code_lines.empty() || p.now->iteration_s <= 0 ||
        p.base->code_lines.size() >= kMaxCodeLines || !SameCode(*p.base, *p.now)) {
      continue;
    }
    sampled.push_back(p);
  }
  return sampled;
}

}  // namespace

bool LineNewSinceTheBaseline(const std::vector<WorkerPattern>& base, const std::vector<WorkerPattern>& now,
                             const std::string& location, const std::vector<int>& ranks) {
  std::unordered_set<int> wanted(ranks.begin(), ranks.end());
  size_t sampled = 0, listed_then = 0, new_now = 0;
  double log_chance = 0;
  for (const RankPair& p : SampledAtBothTimes(base, now)) {
    if (!wanted.contains(p.now->rank)) continue;
    ++sampled;
    if (Listed(*p.base, location)) {
      ++listed_then;
      continue;
    }
    auto line = std::find_if(p.now->code_lines.begin(), p.now->code_lines.end(),
                             [&](const CodeFrame& l) { return l.location == location; });
    if (line == p.now->code_lines.end()) continue;
    ++new_now;
    log_chance += LogChanceLineMissed(line->share * p.now->code_line_periods, p.now->code_line_periods,
                                      p.base->code_line_periods);
  }
  return sampled >= 2 && listed_then == 0 && 2 * new_now > sampled && log_chance < 0 &&
         log_chance <= std::log(kChanceLineMissed);
}

void FindNewCodeOnEveryRank(const std::vector<WorkerPattern>& base, const std::vector<WorkerPattern>& now,
                            const PatternDiff& diff, Diagnosis* diagnosis, const BaselineOptions& options) {
  const CoresNow cores = ReadCoresNow(now);
  const double slowdown_ms = UnexplainedSlowdownMs(diff, *diagnosis, options, cores);
  if (slowdown_ms <= 0) return;
  const std::vector<RankPair> sampled = SampledAtBothTimes(base, now);
  if (sampled.size() < 2) return;
  struct Line {
    uint32_t depth = 0;
    std::vector<double> ms;  // per rank where it is new: its time under the line, ms per iteration
    // The chance that every baseline window without it missed it by chance had they run it
    // alike (log; the ranks' samplers miss it independently).
    double log_chance = 0;
    std::vector<const RankPair*> ranks;
  };
  std::map<std::string, Line> lines;
  for (const RankPair& p : sampled) {
    for (const CodeFrame& line : p.now->code_lines) {
      if (Listed(*p.base, line.location)) continue;
      Line& entry = lines[line.location];
      entry.log_chance += LogChanceLineMissed(line.share * p.now->code_line_periods, p.now->code_line_periods,
                                              p.base->code_line_periods);
      entry.depth = line.depth;
      entry.ms.push_back(line.share * p.now->iteration_s * 1e3);
      entry.ranks.push_back(&p);
    }
  }
  // The deepest such line names it (nearest the work); the one with the most time under it (the
  // new code's outermost call) says what it costs.
  const std::pair<const std::string, Line>* best = nullptr;
  const std::pair<const std::string, Line>* outer = nullptr;
  double best_ms = 0, outer_ms = 0;
  // New code a finding names already (at one of its lines, or their callers' and callees') is that
  // finding's cause, whatever it explains: a 5-rank ViT's gc.collect line, found grown by 386 ms of
  // an 896 ms slowdown, was named again as new code.
  auto named = [&](const std::string& location) {
    return std::any_of(diagnosis->findings.begin(), diagnosis->findings.end(),
                       [&](const Finding& f) { return f.location == location; });
  };
  for (const auto& candidate : lines) {
    if (!AlmostAll(candidate.second.ranks.size(), sampled.size(), options) ||
        !(candidate.second.log_chance < 0 && candidate.second.log_chance <= std::log(kChanceLineMissed))) {
      continue;
    }
    if (named(candidate.first)) return;
    std::vector<double> ms = candidate.second.ms;
    double median_ms = MedianInPlace(ms);
    if (median_ms < options.min_slowdown_share * StepMs(diff)) continue;
    if (outer == nullptr || median_ms > outer_ms) {
      outer = &candidate;
      outer_ms = median_ms;
    }
    if (best == nullptr || candidate.second.depth > best->second.depth ||
        (candidate.second.depth == best->second.depth && median_ms > best_ms)) {
      best = &candidate;
      best_ms = median_ms;
    }
  }
  if (best == nullptr) return;
  if (outer_ms <= best_ms) outer = best;  // nothing more above it
  // What ran under the line. New Python adds its own time to the host's (the step runs it between
  // ops); new ops add theirs to compute. On busy shared cores every rank's ops also slow down
  // beside the new code, whatever it is, so compute's growth alone does not tell: host time grown
  // by half the new code's does (a 5-rank session's confusion matrix, 17.8 ms a step: host +28.7,
  // compute +44.7 ms). Else the own-work category that grew most on its ranks (median).
  auto grown_by = [&](Category c) {
    std::vector<double> deltas;
    for (const RankPair* p : best->second.ranks) {
      deltas.push_back(CategoryMsPerIter(*p->now, c) - CategoryMsPerIter(*p->base, c));
    }
    return MedianInPlace(deltas);
  };
  Category grown = Category::kHost;
  double grown_ms = grown_by(Category::kHost);
  if (grown_ms < outer_ms / 2) {
    grown_ms = -1;
    for (Category c : kOwnWork) {
      if (double delta = grown_by(c); delta > grown_ms) {
        grown_ms = delta;
        grown = c;
      }
    }
  }
  Finding f;
  f.from_baseline = true;
  f.scope = FindingScope::kGlobal;
  f.category = FindingCategoryOf(grown);
  for (const RankPair* p : best->second.ranks) f.workers.push_back(p->now->rank);
  std::sort(f.workers.begin(), f.workers.end());
  f.function = GrownMost(best->second.ranks, grown);
  if (f.function.empty()) f.function = fmt::format("({} code)", CategoryName(grown));
  f.location = best->first;
  f.impact_s_per_iter = std::min(outer_ms, slowdown_ms) / 1e3;
  f.beta = diff.now.iteration_ms > 0 ? outer_ms / diff.now.iteration_ms : 0;
  std::string where = outer == best
                          ? fmt::format("{}", f.location)
                          : fmt::format("{} (deepest; {:.1f} ms there), under {}", f.location, best_ms, outer->first);
  f.evidence = fmt::format(
      "against the baseline: {} of the {} ranks sampled then and now run {} now, {:.1f} ms per iteration (median), "
      "{}; their {} time grew {:+.1f} ms/iter (median); the new code holds {:.0f}% of the {:.1f} ms/iter slowdown {}",
      best->second.ranks.size(), sampled.size(), where, outer_ms, kNewCodeEvidence, CategoryName(grown), grown_ms,
      100 * std::min(1.0, outer_ms / slowdown_ms), slowdown_ms, SlowdownSource(diff, options, slowdown_ms));
  f.action = fmt::format(
      "Every rank now runs code at {} that it did not run at the baseline: the job does more work than it did. Move it "
      "out of the step, run it less often, or make it cheaper.",
      f.location);
  // No hang, no global finding of the window's and none that explains the slowdown: it goes by
  // its cost (InsertUnexplainedCause).
  FoldSlowerOpsInto(diagnosis, &f, cores);
  InsertUnexplainedCause(diagnosis, std::move(f), cores);
}

void LocateByNewCodeLines(const std::vector<WorkerPattern>& base, const std::vector<WorkerPattern>& now,
                          std::vector<Finding>* findings) {
  std::unordered_map<int, const WorkerPattern*> base_by_rank, now_by_rank;
  for (const WorkerPattern& w : base) base_by_rank.emplace(w.rank, &w);
  for (const WorkerPattern& w : now) now_by_rank.emplace(w.rank, &w);
  for (Finding& f : *findings) {
    if (f.scope != FindingScope::kGlobal || !f.location.empty()) continue;
    std::map<std::string, NewLine> lines;
    size_t sampled = 0;  // the finding's ranks with samples at both times
    for (int rank : std::unordered_set<int>(f.workers.begin(), f.workers.end())) {
      auto b = base_by_rank.find(rank);
      auto n = now_by_rank.find(rank);
      if (b == base_by_rank.end() || n == now_by_rank.end() || b->second->code_lines.empty() ||
          n->second->code_lines.empty() || n->second->iteration_s <= 0) {
        continue;
      }
      ++sampled;
      // A line missing from a full list may still have been sampled there, below its last line.
      if (b->second->code_lines.size() >= kMaxCodeLines || !SameCode(*b->second, *n->second)) continue;
      double share_of_iteration = f.impact_s_per_iter / n->second->iteration_s;
      for (const CodeFrame& line : n->second->code_lines) {
        if (line.share < share_of_iteration / 2 || Listed(*b->second, line.location) ||
            !MissingLineMeansNeverRan(line.share * n->second->code_line_periods, n->second->code_line_periods,
                                      b->second->code_line_periods)) {
          continue;
        }
        NewLine& entry = lines[line.location];
        entry.depth = entry.ranks_new == 0 ? line.depth : std::min(entry.depth, line.depth);
        ++entry.ranks_new;
        entry.shares.push_back(line.share);
      }
    }
    const std::pair<const std::string, NewLine>* best = nullptr;
    for (const auto& candidate : lines) {
      if (2 * candidate.second.ranks_new <= sampled) continue;
      if (best == nullptr || candidate.second.depth > best->second.depth ||
          (candidate.second.depth == best->second.depth && candidate.second.ranks_new > best->second.ranks_new)) {
        best = &candidate;
      }
    }
    if (best == nullptr) continue;
    std::vector<double> shares = best->second.shares;
    f.location = best->first;
    f.evidence += fmt::format(
        "; its stack samples now put {:.0f}% of a rank's window (median) under {}, a line the baseline's samples of {} "
        "of its {} ranks sampled then and now never reached: code that runs now and did not then",
        100 * MedianInPlace(shares), f.location, best->second.ranks_new, sampled);
    f.action += fmt::format(" Start with the code at {}: the baseline never ran it.", f.location);
  }
}

}  // namespace eroica
