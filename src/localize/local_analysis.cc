#include "localize/local_analysis.h"

#include <fmt/core.h>

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <optional>

#include "localize/advice.h"
#include "localize/collective_waits.h"
#include "localize/robust_stats.h"
#include "localize/work_signals.h"

namespace eroica {
namespace {

// The categories that are a worker's own work. Communication is excluded: in a synchronous job
// a rank's exposed collective time is mostly waiting for the slowest peer.
constexpr Category kOwnWork[] = {Category::kCompute, Category::kMemory, Category::kDataloader,
                                 Category::kHost};

struct AlsoUp {
  Category category;
  double share;
  double peer_share;
};

struct Excess {
  const WorkerPattern* worker = nullptr;
  Category category = Category::kHost;
  double excess_beta = 0;     // the whole excess the others wait for, in shares of an iteration
  double peer_beta = 0;       // the peers' median share in `category`
  double z = 0;
  double category_excess = 0;  // the excess in `category` alone
  std::vector<AlsoUp> also;    // other categories up on this worker
};

// The worker's function in `category` that exceeds its peers most.
struct FunctionExcess {
  const FunctionPattern* function = nullptr;
  double peer_beta = 0;
  double z = 0;
};

FunctionExcess TopFunction(const WorkerGroup& group, const WorkerPattern& w, Category category,
                           const Expectations& e) {
  FunctionExcess best;
  double best_excess = -1;
  for (const FunctionPattern& f : w.functions) {
    if (f.category != category) continue;
    RobustCenter center = MedianAndMad(FunctionBetas(group, f.name, category));
    double excess = f.beta - center.median;
    if (excess > best_excess) {
      best_excess = excess;
      best = {&f, center.median, RobustZ(f.beta, center, e.min_scale_beta)};
    }
  }
  return best;
}

// Each worker's time in `category` (nullopt: all its own work) per iteration, as a share of the
// group's median iteration. Ranks' windows differ when a trace holds one iteration (each ends
// when that rank's last kernel does), so own work is compared in seconds, not in β.
std::vector<double> OwnShares(const WorkerGroup& group, std::optional<Category> category) {
  double median_s = std::max(MedianIterationS(group), 1e-12);
  std::vector<double> shares;
  shares.reserve(group.workers.size());
  for (const WorkerPattern* w : group.workers) {
    double beta = 0;
    if (category) {
      beta = w->category_beta[static_cast<size_t>(*category)];
    } else {
      for (Category c : kOwnWork) beta += w->category_beta[static_cast<size_t>(c)];
    }
    shares.push_back(beta * w->iteration_s / median_s);
  }
  return shares;
}

// β of `category` on each worker in iteration `i` (a worker's own work is the sum of the
// own-work categories, passed as nullopt).
double IterationBeta(const WorkerPattern& w, size_t i, std::optional<Category> category) {
  const auto& betas = w.iteration_category_beta[i];
  if (category) return betas[static_cast<size_t>(*category)];
  double own = 0;
  for (Category c : kOwnWork) own += betas[static_cast<size_t>(c)];
  return own;
}

// True when worker `index` is above every peer in every iteration the group shares (one miss
// allowed from 8 iterations on). Nullopt when there is no per-iteration data to tell.
std::optional<bool> Persistent(const WorkerGroup& group, size_t index, std::optional<Category> category) {
  size_t iterations = SIZE_MAX;
  for (const WorkerPattern* w : group.workers) iterations = std::min(iterations, w->iteration_category_beta.size());
  if (iterations < 2 || iterations == SIZE_MAX) return std::nullopt;
  size_t above = 0;
  for (size_t i = 0; i < iterations; ++i) {
    double mine = IterationBeta(*group.workers[index], i, category);
    bool highest = true;
    for (size_t j = 0; j < group.workers.size() && highest; ++j) {
      if (j != index && IterationBeta(*group.workers[j], i, category) >= mine) highest = false;
    }
    above += highest ? 1 : 0;
  }
  size_t allowed_misses = iterations >= 8 ? 1 : 0;
  return above + allowed_misses >= iterations;
}

// Whether worker `index`'s excess in `category` (nullopt: all own work) makes it an outlier.
// Large groups: the robust z-score (the paper's k = 5). Small groups have no usable spread:
// the worker must be above all its peers in every iteration.
bool IsOutlier(const WorkerGroup& group, size_t index, std::optional<Category> category, double excess,
               double z, const Expectations& e) {
  if (excess < e.min_excess_beta) return false;
  if (static_cast<double>(group.workers.size()) >= e.small_group) return z >= e.outlier_z;
  std::optional<bool> persistent = Persistent(group, index, category);
  if (!persistent) return excess >= e.fallback_excess_beta;
  return *persistent && excess >= e.small_group_min_excess_beta;
}

// Every worker whose own work stands out from the group, one Excess each. A worker stands out
// in a category, or in its own work as a whole (a throttled CPU slows compute and Python alike,
// none enough alone). The finding's category is its largest outlying category (else its
// largest excess); the impact is the whole own-work excess the others wait for.
std::vector<Excess> OutlyingExcesses(const WorkerGroup& group, const Expectations& e) {
  size_t n = group.workers.size();
  std::vector<std::vector<double>> shares;
  std::vector<RobustCenter> centers;
  std::vector<std::vector<bool>> outlier(n, std::vector<bool>(std::size(kOwnWork), false));
  for (size_t k = 0; k < std::size(kOwnWork); ++k) {
    shares.push_back(OwnShares(group, kOwnWork[k]));
    centers.push_back(MedianAndMad(shares[k]));
    size_t flagged = 0;
    for (size_t i = 0; i < n; ++i) {
      double excess = shares[k][i] - centers[k].median;
      double z = RobustZ(shares[k][i], centers[k], e.min_scale_beta);
      outlier[i][k] = shares[k][i] >= e.min_beta && IsOutlier(group, i, kOwnWork[k], excess, z, e);
      flagged += outlier[i][k] ? 1 : 0;
    }
    // Local means a minority; what most workers share is a global matter.
    if (flagged * 2 >= n && n >= 3) {
      for (size_t i = 0; i < n; ++i) outlier[i][k] = false;
    }
  }
  std::vector<double> own = OwnShares(group, std::nullopt);
  RobustCenter own_center = MedianAndMad(own);
  std::vector<Excess> out;
  for (size_t i = 0; i < n; ++i) {
    double own_excess = own[i] - own_center.median;
    bool own_outlier = IsOutlier(group, i, std::nullopt, own_excess,
                                 RobustZ(own[i], own_center, e.min_scale_beta), e);
    // Flagged either way, the others wait for all of its own-work excess: that is the impact.
    bool any_category = std::find(outlier[i].begin(), outlier[i].end(), true) != outlier[i].end();
    if (!own_outlier && !any_category) continue;
    Excess best;
    for (size_t k = 0; k < std::size(kOwnWork); ++k) {
      if (any_category && !outlier[i][k]) continue;
      double excess = shares[k][i] - centers[k].median;
      if (best.worker == nullptr || excess > best.excess_beta) {
        best = {group.workers[i], kOwnWork[k], excess, centers[k].median,
                RobustZ(shares[k][i], centers[k], e.min_scale_beta)};
      }
    }
    best.category_excess = best.excess_beta;
    best.excess_beta = std::max(best.excess_beta, own_excess);
    for (size_t k = 0; k < std::size(kOwnWork); ++k) {
      double excess = shares[k][i] - centers[k].median;
      if (kOwnWork[k] != best.category && excess >= e.min_excess_beta) {
        best.also.push_back({kOwnWork[k], shares[k][i], centers[k].median});
      }
    }
    out.push_back(best);
  }
  return out;
}

std::string WaitingEvidence(const WorkerGroup& group, const WorkerPattern& suspect) {
  std::vector<double> others;
  for (const WorkerPattern* w : group.workers) {
    if (w != &suspect) others.push_back(w->category_beta[static_cast<int>(Category::kCommunication)]);
  }
  double theirs = MedianInPlace(others);
  double mine = suspect.category_beta[static_cast<int>(Category::kCommunication)];
  if (theirs <= mine + 0.01) return "";
  return fmt::format("; the other {} workers wait on it in collectives (exposed communication β {:.2f} "
                     "vs {:.2f} on rank {})",
                     group.workers.size() - 1, theirs, mine, suspect.rank);
}

Finding MakeFinding(const WorkerGroup& group, const Excess& x, const Expectations& e) {
  const WorkerPattern& w = *x.worker;
  FunctionExcess top = TopFunction(group, w, x.category, e);
  Finding f;
  f.scope = "local";
  f.category = std::string(CategoryName(x.category));
  f.workers = {w.rank};
  f.function = top.function ? top.function->name : "";
  f.beta = top.function ? top.function->beta : 0;
  f.peer_beta = top.peer_beta;
  f.expectation_distance = top.function ? e.Distance(*top.function, w.has_device) : 0;
  f.differential_distance = group.workers.size() >= 3 ? x.z : 0;
  f.impact_s_per_iter = x.excess_beta * MedianIterationS(group);
  std::string also;
  for (const AlsoUp& other : x.also) {
    also += fmt::format("; its {} is also up ({:.2f} vs {:.2f})", CategoryName(other.category),
                        other.share, other.peer_share);
  }
  double iteration_ms = MedianIterationS(group) * 1e3;
  f.evidence = fmt::format("rank {}: {} takes {:.3f} of an iteration vs peer median {:.3f} (+{:.1f} ms; "
                           "its own work in all +{:.1f} ms per {:.1f} ms iteration)",
                           w.rank, CategoryName(x.category), x.peer_beta + x.category_excess, x.peer_beta,
                           x.category_excess * iteration_ms, x.excess_beta * iteration_ms, iteration_ms) +
               also + WaitingEvidence(group, w);
  WorkComparison work = CompareWork(group, w, e.imbalance_ratio);
  if (work.more_work) {
    f.category = "imbalance";
    f.evidence += "; it is given more work: " + work.evidence;
  } else if (x.category == Category::kCompute) {
    f.evidence += "; same work as its peers, done slower";
  }
  if (group.workers.size() == 2) f.evidence += " (only 2 workers: compared with each other)";
  f.action = Advice(f.category, f.scope, w.rank);
  return f;
}

// The rank the others wait for at the collectives confirms a straggler finding; when no own-work
// excess stands out (its delay began before the window), it is the finding itself.
void AddLastArriver(const WorkerGroup& group, const Expectations& e, std::vector<Finding>* findings) {
  std::optional<LastArriver> last = FindLastArriver(group, e);
  if (!last) return;
  for (Finding& f : *findings) {
    if (f.workers == std::vector<int>{last->worker->rank}) {
      f.evidence += "; " + last->evidence;
      return;
    }
  }
  if (!findings->empty()) return;
  const WorkerPattern& w = *last->worker;
  size_t index = static_cast<size_t>(std::find(group.workers.begin(), group.workers.end(), &w) - group.workers.begin());
  Excess best;
  for (Category c : kOwnWork) {
    std::vector<double> shares = OwnShares(group, c);
    RobustCenter center = MedianAndMad(shares);
    double excess = shares[index] - center.median;
    if (best.worker == nullptr || excess > best.excess_beta) {
      best = {&w, c, excess, center.median, RobustZ(shares[index], center, e.min_scale_beta)};
    }
  }
  best.category_excess = best.excess_beta;
  Finding f = MakeFinding(group, best, e);
  double own_ms = std::max(0.0, best.excess_beta) * MedianIterationS(group) * 1e3;
  f.impact_s_per_iter = last->waited_s_per_iter;
  f.action = fmt::format("Rank {} starts its collectives late: look at what it does between iterations "
                         "(data loading, checkpoints, logging) and profile a longer window.", w.rank);
  f.evidence = last->evidence + fmt::format(
      "; its own work in the window is only {:.1f} ms above its peers' (largest: {}), so most of the "
      "delay began before the profiled window", own_ms, CategoryName(best.category));
  findings->push_back(std::move(f));
}

}  // namespace

std::vector<Finding> FindLocalProblems(const WorkerGroup& group, const Expectations& e) {
  std::vector<Finding> findings;
  if (group.workers.size() < 2) return findings;
  std::vector<Excess> excesses = OutlyingExcesses(group, e);
  // With two workers both differ; only the one whose peer waits on it is the cause.
  if (group.workers.size() == 2) {
    std::erase_if(excesses, [&](const Excess& x) {
      const WorkerPattern* other = group.workers[0] == x.worker ? group.workers[1] : group.workers[0];
      return x.worker->category_beta[static_cast<int>(Category::kCommunication)] >
             other->category_beta[static_cast<int>(Category::kCommunication)];
    });
  }
  // One finding per worker: its largest excess; the others go into the evidence.
  std::sort(excesses.begin(), excesses.end(), [](const Excess& a, const Excess& b) {
    return a.excess_beta > b.excess_beta;
  });
  std::vector<const WorkerPattern*> done;
  for (const Excess& x : excesses) {
    if (std::find(done.begin(), done.end(), x.worker) != done.end()) continue;
    done.push_back(x.worker);
    findings.push_back(MakeFinding(group, x, e));
  }
  AddLastArriver(group, e, &findings);
  return findings;
}

}  // namespace eroica
