#include "summary/worker_window.h"

#include <algorithm>
#include <charconv>
#include <limits>
#include <unordered_map>
#include <unordered_set>

#include "summary/correlation_set.h"

namespace eroica {
namespace {

int64_t MostCommonCpuPid(const Trace& trace, const BigVector<EventRole>& roles) {
  std::unordered_map<int64_t, int64_t> counts;
  for (size_t i = 0; i < trace.events.size(); ++i) {
    if (roles[i] != EventRole::kIgnore && !IsDeviceRole(roles[i])) ++counts[trace.events[i].pid];
  }
  int64_t best_pid = 0, best_count = -1;
  for (auto [pid, count] : counts) {
    if (count > best_count || (count == best_count && pid < best_pid)) {
      best_pid = pid;
      best_count = count;
    }
  }
  return best_pid;
}

int64_t StepId(std::string_view name) {
  std::string_view digits = name.substr(name.find('#') + 1);
  int64_t id = -1;
  std::from_chars(digits.data(), digits.data() + digits.size(), id);
  return id;
}

// Where the rank's meta lists the iterations that ended in the window, a step it does not list
// (the one the job's exit cut short) is no iteration (summary/rank_meta.h). Left as they are when
// the meta lists none of the trace's steps: the list then describes another trace.
void LeaveOutUnfinishedSteps(const Trace& trace, std::vector<const TraceEvent*>* steps) {
  const std::vector<int64_t>& completed = trace.meta.completed_steps;
  if (completed.empty()) return;
  std::unordered_set<int64_t> ended(completed.begin(), completed.end());
  auto unfinished = [&](const TraceEvent* step) { return !ended.contains(StepId(trace.Str(step->name))); };
  if (std::all_of(steps->begin(), steps->end(), unfinished)) return;
  std::erase_if(*steps, unfinished);
}

}  // namespace

WorkerWindow FindWorkerWindow(const Trace& trace, const BigVector<EventRole>& roles) {
  WorkerWindow window;
  std::vector<const TraceEvent*> steps;
  for (size_t i = 0; i < trace.events.size(); ++i) {
    if (roles[i] == EventRole::kStepMarker) steps.push_back(&trace.events[i]);
  }
  LeaveOutUnfinishedSteps(trace, &steps);
  if (steps.empty()) {
    window.main_pid = MostCommonCpuPid(trace, roles);
    window.start_ns = std::numeric_limits<int64_t>::max();
    window.end_ns = std::numeric_limits<int64_t>::min();
    for (size_t i = 0; i < trace.events.size(); ++i) {
      if (roles[i] == EventRole::kIgnore) continue;
      window.start_ns = std::min(window.start_ns, trace.events[i].ts_ns);
      window.end_ns = std::max(window.end_ns, trace.events[i].end_ns());
    }
    if (window.end_ns < window.start_ns) window.start_ns = window.end_ns = 0;
    window.warning = "no ProfilerStep markers: the pattern covers the whole trace window";
    return window;
  }
  std::sort(steps.begin(), steps.end(), [](const TraceEvent* a, const TraceEvent* b) { return a->ts_ns < b->ts_ns; });
  window.main_pid = steps.front()->pid;
  window.main_tid = steps.front()->tid;
  window.start_ns = steps.front()->ts_ns;
  int64_t cpu_end_ns = window.start_ns;
  for (const TraceEvent* step : steps) {
    if (step->pid != window.main_pid) continue;
    if (!window.step_ids.empty() && window.step_ids.back() == StepId(trace.Str(step->name))) continue;
    window.step_ids.push_back(StepId(trace.Str(step->name)));
    window.step_starts_ns.push_back(step->ts_ns);
    cpu_end_ns = std::max(cpu_end_ns, step->end_ns());
  }
  // GPU work launched inside the steps belongs to them, even when it runs after they end.
  auto launched_in_steps = [&](size_t i) -> int64_t {  // the launch's correlation id, or -1
    const TraceEvent& e = trace.events[i];
    bool inside =
        roles[i] == EventRole::kLaunch && e.correlation != -1 && e.ts_ns >= window.start_ns && e.ts_ns < cpu_end_ns;
    return inside ? trace.Correlation(e) : -1;
  };
  int64_t smallest = std::numeric_limits<int64_t>::max(), largest = -1;
  size_t count = 0;
  for (size_t i = 0; i < trace.events.size(); ++i) {
    if (int64_t id = launched_in_steps(i); id >= 0) {
      smallest = std::min(smallest, id);
      largest = std::max(largest, id);
      ++count;
    }
  }
  CorrelationSet launched;
  launched.Plan(smallest, largest, count);
  for (size_t i = 0; i < trace.events.size(); ++i) {
    if (int64_t id = launched_in_steps(i); id >= 0) launched.Add(id);
  }
  launched.Seal();
  window.end_ns = cpu_end_ns;
  for (size_t i = 0; i < trace.events.size(); ++i) {
    const TraceEvent& e = trace.events[i];
    if (IsDeviceRole(roles[i]) && e.correlation != -1 && e.end_ns() > window.end_ns &&
        launched.Contains(trace.Correlation(e))) {
      window.end_ns = e.end_ns();
    }
  }
  return window;
}

void FindUnrecordedCollective(const Trace& trace, const BigVector<EventRole>& roles, WorkerWindow* window) {
  if (window->main_tid < 0 || window->step_starts_ns.empty()) return;
  auto in_window = [&](const TraceEvent& e) { return e.ts_ns >= window->start_ns && e.ts_ns < window->end_ns; };
  int64_t last_backend_start = -1;
  bool backend_records = false;
  for (size_t i = 0; i < trace.events.size(); ++i) {
    const TraceEvent& e = trace.events[i];
    if (roles[i] != EventRole::kCpuComm || e.pid != window->main_pid || e.tid == window->main_tid || !in_window(e)) {
      continue;
    }
    backend_records = true;
    last_backend_start = std::max(last_backend_start, e.ts_ns);
  }
  if (!backend_records) return;
  const TraceEvent* launch = nullptr;
  for (size_t i = 0; i < trace.events.size(); ++i) {
    const TraceEvent& e = trace.events[i];
    if (roles[i] != EventRole::kCpuComm || e.tid != window->main_tid || e.pid != window->main_pid || !in_window(e) ||
        e.ts_ns < window->step_starts_ns.back() || e.ts_ns <= last_backend_start) {
      continue;
    }
    if (launch == nullptr || e.ts_ns > launch->ts_ns) launch = &e;
  }
  if (launch == nullptr) return;
  int64_t resumed = window->end_ns;
  for (size_t i = 0; i < trace.events.size(); ++i) {
    const TraceEvent& e = trace.events[i];
    if (e.tid == window->main_tid && e.pid == window->main_pid && roles[i] != EventRole::kIgnore &&
        roles[i] != EventRole::kStepMarker && e.ts_ns >= launch->end_ns()) {
      resumed = std::min(resumed, e.ts_ns);
    }
  }
  window->unrecorded_launch_ns = launch->ts_ns;
  window->unrecorded_wait_end_ns = std::max(resumed, launch->end_ns());
}

}  // namespace eroica
