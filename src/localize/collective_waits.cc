#include "localize/collective_waits.h"

#include <fmt/core.h>

#include <algorithm>

#include "localize/robust_stats.h"

namespace eroica {
namespace {

// A straggler across iterations arrives last nearly always; within a single iteration phases
// may have different stragglers, so there it must cause most of the waiting instead.
constexpr double kPersistentShare = 0.8;
constexpr double kSingleIterationCallShare = 0.5;
constexpr double kSingleIterationWaitShare = 0.6;

// How many leading calls every worker has with the same collective names.
size_t AlignedCalls(const WorkerGroup& group) {
  size_t length = SIZE_MAX;
  for (const WorkerPattern* w : group.workers) length = std::min(length, w->collectives.size());
  if (length == SIZE_MAX) return 0;
  const WorkerPattern* first = group.workers.front();
  for (size_t k = 0; k < length; ++k) {
    for (const WorkerPattern* w : group.workers) {
      if (w->collectives[k].name != first->collectives[k].name) return k;
    }
  }
  return length;
}

}  // namespace

std::optional<LastArriver> FindLastArriver(const WorkerGroup& group, const Expectations& e) {
  size_t n = group.workers.size();
  size_t calls = AlignedCalls(group);
  if (n < 2 || calls == 0) return std::nullopt;
  std::vector<int> last_count(n, 0);
  std::vector<double> waited_us(n, 0);
  size_t first_call = SIZE_MAX;
  double first_wait_us = 0;
  for (size_t k = 0; k < calls; ++k) {
    size_t last = 0;
    for (size_t i = 1; i < n; ++i) {
      if (group.workers[i]->collectives[k].duration_us < group.workers[last]->collectives[k].duration_us) last = i;
    }
    std::vector<double> waits;
    for (size_t i = 0; i < n; ++i) {
      if (i != last) waits.push_back(group.workers[i]->collectives[k].duration_us - group.workers[last]->collectives[k].duration_us);
    }
    double wait = MedianInPlace(waits);
    ++last_count[last];
    waited_us[last] += wait;
  }
  size_t best = static_cast<size_t>(std::max_element(waited_us.begin(), waited_us.end()) - waited_us.begin());
  double call_share = static_cast<double>(last_count[best]) / static_cast<double>(calls);
  double total_wait_us = 0;
  for (double w : waited_us) total_wait_us += w;
  double wait_share = total_wait_us > 0 ? waited_us[best] / total_wait_us : 0;
  const WorkerPattern& w = *group.workers[best];
  bool persistent = w.iterations() >= 3 ? call_share >= kPersistentShare
                                         : call_share >= kSingleIterationCallShare &&
                                               wait_share >= kSingleIterationWaitShare;
  double per_iter_s = waited_us[best] / 1e6 / std::max(1, w.iterations());
  if (!persistent || per_iter_s < e.small_group_min_excess_beta * MedianIterationS(group)) return std::nullopt;
  for (size_t k = 0; k < calls && first_call == SIZE_MAX; ++k) {
    bool is_last = true;
    for (const WorkerPattern* other : group.workers) {
      if (other->collectives[k].duration_us < w.collectives[k].duration_us) is_last = false;
    }
    if (is_last) {
      first_call = k;
      std::vector<double> waits;
      for (const WorkerPattern* other : group.workers) {
        if (other != &w) waits.push_back(other->collectives[k].duration_us - w.collectives[k].duration_us);
      }
      first_wait_us = MedianInPlace(waits);
    }
  }
  LastArriver out;
  out.worker = &w;
  out.calls_compared = static_cast<int>(calls);
  out.calls_last = last_count[best];
  out.waited_s_per_iter = per_iter_s;
  out.evidence = fmt::format(
      "rank {} arrives last at {} of {} collectives (the first: call #{} {}, where the others wait a "
      "median {:.2f} ms for it); in all the others wait {:.1f} ms per iteration for it",
      w.rank, out.calls_last, calls, first_call + 1, w.collectives[first_call].name, first_wait_us / 1e3,
      per_iter_s * 1e3);
  return out;
}

}  // namespace eroica
