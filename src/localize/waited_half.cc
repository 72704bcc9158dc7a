#include "localize/waited_half.h"

#include <fmt/core.h>
#include <fmt/ranges.h>

#include <algorithm>
#include <numeric>

#include "localize/group_members.h"
#include "localize/iteration_evidence.h"

namespace eroica {
namespace {

std::vector<int> RanksOf(const WorkerGroup& group, const std::vector<size_t>& positions) {
  std::vector<int> ranks;
  ranks.reserve(positions.size());
  for (size_t k : positions) ranks.push_back(group.row(k).rank);
  std::sort(ranks.begin(), ranks.end());
  return ranks;
}

// Whether the late half's own work exceeds the waiting half's in every iteration of the window
// (a fault persists, noise moves between ranks), by `floor` over the window (`window_gap`: the
// least late rank's share less the busiest waiting rank's); without per-iteration shares, by the
// larger floor IsOutlier holds such a window to.
bool LateInEveryIteration(const WorkerGroup& group, const std::vector<size_t>& late, const std::vector<size_t>& waiting,
                          double window_gap, double floor, const Expectations& e) {
  size_t iterations = SIZE_MAX;
  for (size_t k = 0; k < group.size(); ++k) iterations = std::min<size_t>(iterations, group.row(k).iterations_count);
  if (iterations < 2) return window_gap >= e.fallback_excess_beta;
  if (window_gap < floor) return false;
  for (size_t i = 0; i < iterations; ++i) {
    double late_lo = 1e300, waiting_hi = -1e300;
    for (size_t k : late) late_lo = std::min(late_lo, IterationShare(group, k, i, std::nullopt));
    for (size_t k : waiting) waiting_hi = std::max(waiting_hi, IterationShare(group, k, i, std::nullopt));
    if (late_lo <= waiting_hi) return false;
  }
  return true;
}

}  // namespace

std::optional<WaitingHalves> SplitIntoWaitingHalves(const WorkerGroup& group, const Expectations& e) {
  const size_t n = group.size();
  if (n < 4 || n % 2 != 0) return std::nullopt;
  std::vector<double> comm = CategoryBetas(group, Category::kCommunication);
  std::vector<size_t> order(n);
  std::iota(order.begin(), order.end(), size_t{0});
  std::stable_sort(order.begin(), order.end(), [&](size_t a, size_t b) { return comm[a] < comm[b]; });
  std::vector<size_t> late(order.begin(), order.begin() + static_cast<std::ptrdiff_t>(n / 2));
  std::vector<size_t> waiting(order.begin() + static_cast<std::ptrdiff_t>(n / 2), order.end());
  auto range = [&](const std::vector<size_t>& half, auto value) {
    auto [lo, hi] =
        std::minmax_element(half.begin(), half.end(), [&](size_t a, size_t b) { return value(a) < value(b); });
    return std::pair{value(*lo), value(*hi)};
  };
  auto comm_of = [&](size_t k) { return comm[k]; };
  auto own_of = [&](size_t k) { return OwnWorkBeta(group.row(k)); };
  auto [late_comm_lo, late_comm_hi] = range(late, comm_of);
  auto [wait_comm_lo, wait_comm_hi] = range(waiting, comm_of);
  const double floor = StragglerFloor(group, e);
  double wait_gap = wait_comm_lo - late_comm_hi;
  if (wait_gap < floor || wait_gap <= late_comm_hi - late_comm_lo || wait_gap <= wait_comm_hi - wait_comm_lo) {
    return std::nullopt;
  }
  auto [late_own_lo, late_own_hi] = range(late, own_of);
  auto [wait_own_lo, wait_own_hi] = range(waiting, own_of);
  if (!LateInEveryIteration(group, late, waiting, late_own_lo - wait_own_hi, floor, e)) return std::nullopt;
  WaitingHalves halves;
  for (size_t k : late) halves.waited_for.push_back(group.members[k]);
  for (size_t k : waiting) halves.waiting.push_back(group.members[k]);
  halves.evidence = fmt::format(
      "ranks {} wait {:.2f}-{:.2f} of a step in collectives, ranks {} {:.2f}-{:.2f}, whose own work is "
      "{:.2f}-{:.2f} of a step against {:.2f}-{:.2f}: half the group waits for the other half, so each rank "
      "of that half is compared with the half that waits",
      fmt::join(RanksOf(group, waiting), ","), wait_comm_lo, wait_comm_hi, fmt::join(RanksOf(group, late), ","),
      late_comm_lo, late_comm_hi, late_own_lo, late_own_hi, wait_own_lo, wait_own_hi);
  return halves;
}

WorkerGroup WithTheWaitingHalf(const WorkerGroup& group, const WaitingHalves& halves, uint32_t waited_for) {
  WorkerGroup sub{group.table, halves.waiting};
  sub.members.push_back(waited_for);
  std::sort(sub.members.begin(), sub.members.end());
  return sub;
}

}  // namespace eroica
