// What a worker's per-iteration shares say about it against its group: who leads in every
// iteration (persistence), and whose excess summed over the window stands out from the noise
// the group's own iterations show. A fault persists or recurs; noise moves around.
#pragma once

#include <cstddef>
#include <optional>
#include <vector>

#include "localize/expectations.h"
#include "localize/groups.h"

namespace eroica {

// The categories that are a worker's own work. Communication is excluded: in a synchronous job
// a rank's exposed collective time is mostly waiting for the slowest peer.
inline constexpr Category kOwnWork[] = {Category::kCompute, Category::kMemory, Category::kDataloader, Category::kHost};
inline constexpr size_t kOwnCount = std::size(kOwnWork);

// A worker's own work over its window, as a share of its own iteration.
inline double OwnWorkBeta(const WorkerRow& w) {
  double beta = 0;
  for (Category c : kOwnWork) beta += w.beta(c);
  return beta;
}

// Member k's share of iteration i in `category` (nullopt: all its own work).
double IterationShare(const WorkerGroup& group, size_t k, size_t i, std::optional<Category> category);

// Per iteration, who does the most of a kind of own work and by how much: precomputed once per
// group and category, so asking "is this worker above every peer in every iteration?" costs
// O(iterations) even for a million workers.
class IterationLeaders {
 public:
  IterationLeaders(const WorkerGroup& group, std::optional<Category> category) {
    size_t iterations = SIZE_MAX;
    for (size_t k = 0; k < group.size(); ++k) iterations = std::min<size_t>(iterations, group.row(k).iterations_count);
    if (iterations == SIZE_MAX) iterations = 0;
    leader_.assign(iterations, SIZE_MAX);
    best_.assign(iterations, -1);
    second_.assign(iterations, -1);
    for (size_t k = 0; k < group.size(); ++k) {
      for (size_t i = 0; i < iterations; ++i) {
        double share = IterationShare(group, k, i, category);
        if (share > best_[i]) {
          second_[i] = best_[i];
          best_[i] = share;
          leader_[i] = k;
        } else if (share > second_[i]) {
          second_[i] = share;
        }
      }
    }
  }

  size_t iterations() const { return leader_.size(); }
  // True when member `k` is strictly above every peer in every iteration (one miss allowed
  // from 8 iterations on).
  bool Persistent(size_t k) const {
    size_t above = 0;
    for (size_t i = 0; i < leader_.size(); ++i) above += (leader_[i] == k && best_[i] > second_[i]) ? 1 : 0;
    size_t allowed_misses = leader_.size() >= 8 ? 1 : 0;
    return above + allowed_misses >= leader_.size();
  }

 private:
  std::vector<size_t> leader_;
  std::vector<double> best_, second_;
};

// Each member's excess over the group's median share, iteration by iteration, summed over the
// window and set against the spread of the other members' per-iteration deviations: a loader that
// stalls every second iteration, or a rank slowed in most of them, stands out by its sum even
// where it does not lead every single iteration. O(members × iterations) to build.
class WindowExcess {
 public:
  // `own_work`: the window of all own work (category nullopt) of the same group, whose spread a
  // category's sum must also rise above; null for the own-work window itself.
  WindowExcess(const WorkerGroup& group, std::optional<Category> category, const Expectations& e,
               const WindowExcess* own_work = nullptr);

  size_t iterations() const { return iterations_; }
  // Member k's mean excess per iteration (in shares of an iteration).
  double MeanExcess(size_t k) const { return mean_excess_[k]; }
  // Its mean excess in units of the noise a mean over the window has (spread / √iterations), the
  // spread being the larger of the category's and all own work's (the .cc says why).
  double Z(size_t k) const { return z_[k]; }
  // The same against the category's own spread alone: enough only where other evidence says
  // the others wait for this member (it arrives last at the collectives), or where its excess
  // stays in the category in every iteration (SmallestExcess).
  double CategoryZ(size_t k) const { return category_z_[k]; }
  // Member k's smallest excess over the iteration's median in any one iteration of the window.
  double SmallestExcess(size_t k) const { return smallest_excess_[k]; }

 private:
  size_t iterations_ = 0;
  std::vector<double> mean_excess_, z_, category_z_, smallest_excess_;
  std::vector<double> spread_;  // per member: the spread of the others' deviations
};

}  // namespace eroica
