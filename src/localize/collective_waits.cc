#include "localize/collective_waits.h"

#include <fmt/core.h>

#include <algorithm>
#include <cstddef>
#include <cstdint>
#include <utility>
#include <vector>

#include "base/robust_stats.h"

namespace eroica {
namespace {

// A straggler across iterations arrives last nearly always; within a single iteration phases
// may have different stragglers, so there it must cause most of the waiting instead.
constexpr double kPersistentShare = 0.8;
constexpr double kSingleIterationCallShare = 0.5;
constexpr double kSingleIterationWaitShare = 0.6;
// A rank that stalls every second iteration (its loader workers fall behind every other batch)
// arrives last at only about half of the calls, but the others wait for it alone. On 2-rank
// runs here such ranks caused 0.99 of all the waiting at 0.6 of the calls; in 11 healthy
// 2-rank runs the most waited-for rank caused 0.56-0.88 of it, and in 141 healthy runs of 3-8
// ranks at most 0.96, that one at 0.8 of the calls (a last arriver by the rule above anyway).
constexpr double kNearlyAllWaitShare = 0.95;
// Counting calls weighs a call where every rank arrived together (a small all-reduce of metrics
// right after the gradients', a DDP bucket after the first) as much as one where the others
// waited 100 ms: there the last to arrive is chance, and a straggler is last at only some of
// them (a 4-rank graph network whose rank 3 had graphs 1.6x as large: last at 4 of its 5 gradient
// all-reduces, at none of the 5 metrics ones, 0.4 of the calls; an LSTM under DDP whose rank 3
// had reviews 1.3x as long: 0.20 of 50 calls, 0.98 of the waiting). So the window's iterations
// vote instead, each for the rank its calls waited for most, and the waiting is summed: a rank
// whose slowness moved to no other rank in 0.8 of the iterations, for 0.9 of the waiting. Set
// from the three unseen jobs of stops 56-58 (3-6 ranks on 2 cores, the sessions this reads: 3
// ranks and iterations or more, calls that split into them): in their 180 healthy sessions
// (baselines and healthy runs) the most waited-for rank had at most 0.86 of the waiting (median
// 0.43), and 42 of 113 faulty ones' slow ranks met both bars. Made after, 51 healthy sessions
// of four other jobs reached 0.94 of it once, though in under 0.8 of the iterations: no healthy
// session met both (README.md, stop 59, has the table).
// (kAcrossIterationsShare, collective_waits.h)
constexpr double kAcrossWaitShare = 0.9;

// How many leading calls every worker has with the same collective names.
size_t AlignedCalls(const WorkerGroup& group) {
  size_t length = SIZE_MAX;
  for (size_t k = 0; k < group.size(); ++k) length = std::min<size_t>(length, group.row(k).collectives_count);
  if (length == SIZE_MAX) return 0;
  auto first = group.table->collectives(group.members[0]);
  for (size_t k = 1; k < group.size(); ++k) {
    auto calls = group.table->collectives(group.members[k]);
    for (size_t c = 0; c < length; ++c) {
      if (calls[c].name != first[c].name) length = c;
    }
  }
  return length;
}

float Duration(const WorkerGroup& group, size_t k, size_t call) {
  return group.table->collectives(group.members[k])[call].duration_us;
}

// The others' median wait for member `last` at `call`.
double MedianWait(const WorkerGroup& group, size_t last, size_t call) {
  std::vector<double> waits;
  waits.reserve(group.size());
  for (size_t k = 0; k < group.size(); ++k) {
    if (k != last) waits.push_back(Duration(group, k, call) - Duration(group, last, call));
  }
  return MedianInPlace(waits);
}

// Each aligned call's iteration, from the first member's pattern (CollectiveCall::iteration);
// else, where the calls split evenly into the window's iterations, by their order; empty where
// neither says it.
std::vector<size_t> IterationOfEachCall(const WorkerGroup& group, size_t calls, size_t iterations) {
  std::vector<size_t> of_call(calls);
  auto first = group.table->collectives(group.members[0]);
  bool known = true;
  for (size_t c = 0; c < calls && known; ++c) {
    known = first[c].iteration >= 0 && static_cast<size_t>(first[c].iteration) < iterations;
    if (known) of_call[c] = static_cast<size_t>(first[c].iteration);
  }
  if (known) return of_call;
  if (calls % iterations != 0) return {};
  for (size_t c = 0; c < calls; ++c) of_call[c] = c / (calls / iterations);
  return of_call;
}

// Of the window's iterations with a compared call (3 or more), how many waited mostly for each
// member (their calls' waits summed by whom they waited for); none compared where the calls'
// iterations are unknown.
void CountIterationsWaitedFor(const WorkerGroup& group, CollectiveWaits* waits) {
  size_t iterations = SIZE_MAX;
  for (size_t k = 0; k < group.size(); ++k) {
    iterations = std::min(iterations, static_cast<size_t>(std::max(0, group.row(k).iterations)));
  }
  if (iterations == SIZE_MAX || iterations < 3) return;
  const std::vector<size_t> of_call = IterationOfEachCall(group, waits->calls(), iterations);
  if (of_call.empty()) return;
  std::vector<std::vector<double>> waited(iterations, std::vector<double>(group.size(), 0.0));
  std::vector<bool> called(iterations, false);
  for (size_t c = 0; c < of_call.size(); ++c) {
    waited[of_call[c]][waits->last_at[c]] += waits->wait_at[c];
    called[of_call[c]] = true;
  }
  const auto compared = static_cast<int>(std::count(called.begin(), called.end(), true));
  if (compared < 3) return;
  waits->iterations = compared;
  for (size_t i = 0; i < iterations; ++i) {
    if (!called[i]) continue;
    ++waits->iterations_waited_for[static_cast<size_t>(std::max_element(waited[i].begin(), waited[i].end()) -
                                                       waited[i].begin())];
  }
}

}  // namespace

double CollectiveWaits::WaitedSPerIter(const WorkerGroup& group, size_t member) const {
  return waited_us[member] / 1e6 / std::max(1, group.row(member).iterations);
}

CollectiveWaits ReadCollectiveWaits(const WorkerGroup& group) {
  const size_t n = group.size();
  const size_t calls = AlignedCalls(group);
  CollectiveWaits waits;
  waits.waited_us.assign(n, 0);
  waits.calls_last.assign(n, 0);
  waits.iterations_waited_for.assign(n, 0);
  if (n < 2 || calls == 0) return waits;
  waits.last_at.resize(calls);
  waits.wait_at.resize(calls);
  for (size_t c = 0; c < calls; ++c) {
    size_t last = 0;
    for (size_t k = 1; k < n; ++k) {
      if (Duration(group, k, c) < Duration(group, last, c)) last = k;
    }
    waits.last_at[c] = last;
    waits.wait_at[c] = MedianWait(group, last, c);
    ++waits.calls_last[last];
    waits.waited_us[last] += waits.wait_at[c];
  }
  CountIterationsWaitedFor(group, &waits);
  return waits;
}

std::optional<LastArriver> FindLastArriver(const WorkerGroup& group, const Expectations& e,
                                           std::optional<size_t> waited_across) {
  const size_t n = group.size();
  const CollectiveWaits waits = ReadCollectiveWaits(group);
  const size_t calls = waits.calls();
  if (n < 2 || calls == 0) return std::nullopt;
  const std::vector<double>& waited_us = waits.waited_us;
  size_t best = static_cast<size_t>(std::max_element(waited_us.begin(), waited_us.end()) - waited_us.begin());
  double call_share = static_cast<double>(waits.calls_last[best]) / static_cast<double>(calls);
  double total_wait_us = 0;
  for (double w : waited_us) total_wait_us += w;
  double wait_share = total_wait_us > 0 ? waited_us[best] / total_wait_us : 0;
  const int iterations = waits.iterations;
  const int waited_for = waits.iterations_waited_for[best];
  const WorkerRow& w = group.row(best);
  // With one peer the waiting has nowhere else to go: two ranks' waits say only which was slower.
  bool across = n >= 3 && iterations > 0 && waited_for >= kAcrossIterationsShare * iterations &&
                (wait_share >= kAcrossWaitShare || waited_across == best);
  bool persistent = w.iterations >= 3
                        ? call_share >= kPersistentShare ||
                              (call_share >= kSingleIterationCallShare && wait_share >= kNearlyAllWaitShare) || across
                        : call_share >= kSingleIterationCallShare && wait_share >= kSingleIterationWaitShare;
  double per_iter_s = waits.WaitedSPerIter(group, best);
  if (!persistent || per_iter_s < e.small_group_min_excess_beta * MedianIterationS(group)) return std::nullopt;
  size_t first =
      static_cast<size_t>(std::find(waits.last_at.begin(), waits.last_at.end(), best) - waits.last_at.begin());
  LastArriver out;
  out.member = best;
  out.calls_compared = static_cast<int>(calls);
  out.calls_last = waits.calls_last[best];
  out.waited_s_per_iter = per_iter_s;
  out.wait_share = wait_share;
  out.iterations_compared = iterations;
  out.iterations_waited_for = waited_for;
  out.across_the_window = across;
  out.evidence = fmt::format(
      "rank {} arrives last at {} of {} collectives (the first: call #{} {}, where the others wait a "
      "median {:.2f} ms for it); in all the others wait {:.1f} ms per iteration for it",
      w.rank, out.calls_last, calls, first + 1,
      group.table->name(group.table->collectives(group.members[best])[first].name),
      MedianWait(group, best, first) / 1e3, per_iter_s * 1e3);
  if (iterations > 0 && out.calls_last < out.calls_compared) {  // last at some calls only: who they waited for
    out.evidence += fmt::format(", mostly for it in {} of {} iterations, {:.2f} of all their waiting", waited_for,
                                iterations, wait_share);
  }
  return out;
}

std::vector<RankWaits> WaitsForEachRank(const WorkerTable& table) {
  std::vector<RankWaits> out;
  for (const WorkerGroup& group : GroupWorkers(table)) {
    if (group.size() < 3) continue;
    const CollectiveWaits waits = ReadCollectiveWaits(group);
    if (waits.calls() == 0) continue;
    const double iteration_s = MedianIterationS(group);
    double total_us = 0;
    for (double w : waits.waited_us) total_us += w;
    for (size_t k = 0; k < group.size(); ++k) {
      out.push_back({.rank = group.row(k).rank,
                     .waited_s_per_iter = waits.WaitedSPerIter(group, k),
                     .wait_share = total_us > 0 ? waits.waited_us[k] / total_us : 0,
                     .iterations_waited_for = waits.iterations_waited_for[k],
                     .iterations = waits.iterations,
                     .group_iteration_s = iteration_s,
                     .group_size = group.size()});
    }
  }
  return out;
}

}  // namespace eroica
