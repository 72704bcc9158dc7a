#include "summary/program_points.h"

#include <algorithm>
#include <limits>
#include <map>
#include <set>
#include <string>
#include <tuple>
#include <utility>
#include <vector>

namespace eroica {
namespace {

constexpr uint32_t kNoFunction = std::numeric_limits<uint32_t>::max();

// The op found so far on one side of a gap: where it meets the gap, and its length.
struct Landmark {
  int64_t at = 0;
  int64_t dur = -1;
  uint32_t function = kNoFunction;
};

// Trace times are whole microseconds, start and length rounded apart: a parent op and its last
// child can end a microsecond apart either way, so the name of the point after them flipped
// between steps ("aten::detach" in some, its child "detach" in others: one checkpoint at two
// points). An op `outer` holds `inner` when inner starts inside it and ends no later than that
// rounding allows.
constexpr int64_t kTimestampRoundingNs = 1000;

bool Holds(const Landmark& outer, const Landmark& inner) {
  int64_t outer_start = outer.at - outer.dur, inner_start = inner.at - inner.dur;
  return outer_start <= inner_start && inner_start < outer.at && inner.at <= outer.at + kTimestampRoundingNs;
}

// Before a gap the op that ended last wins, unless the other holds it (the outer op names the
// point); after it, the one that started first (starts round in order). On a tie the longer one,
// which is the outer op: a parent and its last child end together.
bool Closer(const Landmark& candidate, const Landmark& best, bool before) {
  if (best.function == kNoFunction) return candidate.function != kNoFunction;
  if (candidate.function == kNoFunction) return false;
  if (before) {
    bool best_holds = Holds(best, candidate), candidate_holds = Holds(candidate, best);
    if (best_holds != candidate_holds) return candidate_holds;
  }
  if (candidate.at != best.at) return before ? candidate.at > best.at : candidate.at < best.at;
  return candidate.dur > best.dur;
}

bool IsLandmark(EventRole role) {
  return role != EventRole::kIgnore && role != EventRole::kStepMarker && !IsDeviceRole(role);
}

std::string PointName(const FunctionTable& table, uint32_t before, uint32_t after, uint32_t resumed_from) {
  if (resumed_from != kNoFunction) {
    std::string name = "(resuming after " + table.all()[resumed_from].name;
    return after == kNoFunction ? name + ")" : name + ", before " + table.all()[after].name + ")";
  }
  if (before == kNoFunction) return "(python before " + table.all()[after].name + ")";
  if (after == kNoFunction) return "(python after " + table.all()[before].name + ")";
  return "(python between " + table.all()[before].name + " and " + table.all()[after].name + ")";
}

// The window's edges cut a step's Python short: the last step's code after its last op has no
// op after it in the window ("(python after A)"), the first step's before its first op none
// before it. In every other step the same code runs on to the op that follows it there. So a gap
// cut at the end is the point of each step's last gap after the same op, where those all reach
// one point (and the one cut at the start, of each step's first gap before the same op): else a
// cost of every step (a checkpoint saved after the optimizer: 4 of 5 steps at "(python between
// aten::detach and aten::zeros)", where aten::zeros is the next step's range being made, the last
// at "(python after aten::detach)") counts as a point reached in only some of them. Otherwise the
// cut gap keeps its name. `step_of_start` and `step_of_end`: the step each gap starts and ends in.
void JoinPointsCutByTheWindow(const std::vector<size_t>& step_of_start, const std::vector<size_t>& step_of_end,
                              std::vector<std::tuple<uint32_t, uint32_t, uint32_t>>* keys) {
  constexpr uint32_t kSeveral = kNoFunction - 1;
  auto note = [](auto* seen, auto side, uint32_t other) {
    auto [it, fresh] = seen->emplace(side, other);
    if (!fresh && it->second != other) it->second = kSeveral;
  };
  // Each other step's last gap after an op (and resumption), and its first gap before an op: the
  // steps the cuts fall in run that op in other places too.
  std::set<size_t> cut_at_end, cut_at_start;
  for (size_t g = 0; g < keys->size(); ++g) {
    const auto& [before, after, resumed] = (*keys)[g];
    if (after == kNoFunction) cut_at_end.insert(step_of_start[g]);
    if (before == kNoFunction && resumed == kNoFunction) cut_at_start.insert(step_of_end[g]);
  }
  std::map<std::tuple<size_t, uint32_t, uint32_t>, size_t> last_after;
  std::map<std::pair<size_t, uint32_t>, size_t> first_before;
  for (size_t g = 0; g < keys->size(); ++g) {
    const auto& [before, after, resumed] = (*keys)[g];
    if (after == kNoFunction || (before == kNoFunction && resumed == kNoFunction)) continue;
    if (!cut_at_end.contains(step_of_start[g])) last_after[{step_of_start[g], before, resumed}] = g;
    if (resumed == kNoFunction && !cut_at_start.contains(step_of_end[g])) {
      first_before.emplace(std::pair{step_of_end[g], after}, g);
    }
  }
  std::map<std::pair<uint32_t, uint32_t>, uint32_t> after_of;
  std::map<uint32_t, uint32_t> before_of;
  for (const auto& [side, g] : last_after)
    note(&after_of, std::pair{std::get<1>(side), std::get<2>(side)}, std::get<1>((*keys)[g]));
  for (const auto& [side, g] : first_before) note(&before_of, side.second, std::get<0>((*keys)[g]));
  for (auto& [before, after, resumed] : *keys) {
    if (after == kNoFunction && (before != kNoFunction || resumed != kNoFunction)) {
      auto it = after_of.find({before, resumed});
      if (it != after_of.end() && it->second != kSeveral) after = it->second;
    } else if (before == kNoFunction && resumed == kNoFunction && after != kNoFunction) {
      auto it = before_of.find(after);
      if (it != before_of.end() && it->second != kSeveral) before = it->second;
    }
  }
}

}  // namespace

void NameProgramPoints(const Trace& trace, const BigVector<EventRole>& roles, const BigVector<uint32_t>& functions,
                       const WorkerWindow& window, uint32_t unattributed, bool has_device, CriticalPath* critical_path,
                       FunctionTable* table) {
  std::vector<size_t> gaps;
  std::vector<int64_t> gap_starts, gap_ends;
  std::vector<uint32_t> resumed_from;  // per gap: the collective (of another thread) it follows
  uint32_t previous = kNoFunction;
  for (auto it = critical_path->begin(); it != critical_path->end(); ++it) {
    Span span = *it;
    uint32_t before = previous;
    previous = span.function;
    if (span.function != unattributed) continue;
    gaps.push_back(it.index());
    gap_starts.push_back(span.start_ns);
    gap_ends.push_back(span.end_ns);
    bool after_collective =
        !has_device && before != kNoFunction && table->all()[before].category == Category::kCommunication;
    resumed_from.push_back(after_collective ? before : kNoFunction);
  }
  if (gaps.empty()) return;

  // Each op is offered to the one gap it is nearest to on each side; the prefix and suffix
  // passes below hand the best on to the gaps further away. One pass, no sort of the events.
  std::vector<Landmark> before(gaps.size()), after(gaps.size());
  for (size_t i = 0; i < trace.events.size(); ++i) {
    const TraceEvent& e = trace.events[i];
    if (!IsLandmark(roles[i]) || e.pid != window.main_pid) continue;
    if (window.main_tid >= 0 && e.tid != window.main_tid) continue;
    auto next_gap = std::lower_bound(gap_starts.begin(), gap_starts.end(), e.end_ns());
    if (next_gap != gap_starts.end()) {
      Landmark& best = before[static_cast<size_t>(next_gap - gap_starts.begin())];
      Landmark candidate{e.end_ns(), e.dur_ns, functions[i]};
      if (Closer(candidate, best, /*before=*/true)) best = candidate;
    }
    auto previous_gap = std::upper_bound(gap_ends.begin(), gap_ends.end(), e.ts_ns);
    if (previous_gap != gap_ends.begin()) {
      Landmark& best = after[static_cast<size_t>(previous_gap - gap_ends.begin()) - 1];
      Landmark candidate{e.ts_ns, e.dur_ns, functions[i]};
      if (Closer(candidate, best, /*before=*/false)) best = candidate;
    }
  }
  for (size_t g = 1; g < gaps.size(); ++g) {
    if (Closer(before[g - 1], before[g], /*before=*/true)) before[g] = before[g - 1];
  }
  for (size_t g = gaps.size() - 1; g-- > 0;) {
    if (Closer(after[g + 1], after[g], /*before=*/false)) after[g] = after[g + 1];
  }

  // (before, after, collective resumed from): a resumption's point does not depend on `before`.
  using Key = std::tuple<uint32_t, uint32_t, uint32_t>;
  std::vector<Key> keys(gaps.size());
  for (size_t g = 0; g < gaps.size(); ++g) {
    // The thread resumes only if it was not running: an op of its own that ends where the gap
    // begins (a blocking call it returned from, recorded by itself) says it was, and so does a
    // step that begins there (the thread marks it; a collective recorded past its step's end is
    // painted up to there, summarizer.cc PaintedEnd, and woke no one).
    bool at_step = std::binary_search(window.step_starts_ns.begin(), window.step_starts_ns.end(), gap_starts[g]);
    if (at_step || (before[g].function != kNoFunction && before[g].at >= gap_starts[g])) resumed_from[g] = kNoFunction;
    bool resumed = resumed_from[g] != kNoFunction;
    keys[g] = Key{resumed ? kNoFunction : before[g].function, after[g].function, resumed_from[g]};
  }
  std::vector<size_t> step_of_start(gaps.size()), step_of_end(gaps.size());
  const std::vector<int64_t>& steps = window.step_starts_ns;
  for (size_t g = 0; g < gaps.size(); ++g) {
    step_of_start[g] = static_cast<size_t>(std::upper_bound(steps.begin(), steps.end(), gap_starts[g]) - steps.begin());
    step_of_end[g] = static_cast<size_t>(std::upper_bound(steps.begin(), steps.end(), gap_ends[g] - 1) - steps.begin());
  }
  JoinPointsCutByTheWindow(step_of_start, step_of_end, &keys);
  std::map<Key, uint32_t> points;
  for (size_t g = 0; g < gaps.size(); ++g) {
    const Key& key = keys[g];
    if (std::get<2>(key) == kNoFunction && std::get<0>(key) == kNoFunction && std::get<1>(key) == kNoFunction) continue;
    auto it = points.find(key);
    if (it == points.end()) {
      std::string name = PointName(*table, std::get<0>(key), std::get<1>(key), std::get<2>(key));
      it = points.emplace(key, table->Intern(Category::kHost, HostKind::kPython, name)).first;
    }
    critical_path->set_function(gaps[g], it->second);
    FunctionStats& stats = (*table)[it->second];
    ++stats.calls;
    stats.total_duration_ns += gap_ends[g] - gap_starts[g];
    stats.durations.Add(gap_ends[g] - gap_starts[g]);
  }
}

}  // namespace eroica
