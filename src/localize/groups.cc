#include "localize/groups.h"

#include <algorithm>
#include <cmath>
#include <string_view>
#include <vector>

#include "base/robust_stats.h"
#include "summary/function_name.h"

namespace eroica {
namespace {

// Like roles share most of what they run. Containment, not Jaccard: a pattern keeps its
// busiest functions, so a slowed rank may keep a few others than its peers, but the smaller set
// stays inside the larger one.
constexpr double kSameRoleOverlap = 0.5;

// What a worker runs, never how long it takes: a throttled, starving or GC-storming rank runs
// the same ops and collectives as its peers, while its critical-path shares are what the fault
// changes. Operations it calls (compute, memory, communication; any β) and its collectives by
// name and calls per iteration: ranks' windows can hold different numbers of steps (a straggler's
// window closes on its time limit first; a capture keeps only the first steps of a window with
// too many events), and a rank with 1 step of a window its peers had 5 of issued a fifth of their
// collectives in it.
struct RoleSignature {
  std::vector<StringId> operations;                      // sorted, unique
  std::vector<std::pair<StringId, double>> collectives;  // (name, calls per iteration), sorted
  // Its point-to-point calls in issue order (true: a send, false: a receive). Ranks at one pipeline
  // position issue them in one order: the first stage sends its activations before it receives their
  // gradients, a later stage receives before it sends; by name (and often by count) each stage
  // issues the other's calls (a 2-stage pipeline's stages had 0.67 of their calls in common).
  // Data-parallel peers issue none, or the same in the same order.
  std::vector<bool> p2p_sends;
  // How many point-to-point calls it issued before each of its other collectives (the k-th entry:
  // before the k-th). A position's schedule passes as many per step between its stage's own
  // collectives on every replica; an inner stage passes data both ways, twice an edge stage's
  // calls, in the same alternating order as the last stage (3 stages of 2 replicas: 16 receives
  // and sends a step on the middle stage, 8 on the last, both "rsrs...").
  std::vector<uint32_t> p2p_before_collective;
};

// Collective names whose calls say which way the data moves (summary/function_name.h:
// CanonicalCollective of gloo:send, gloo:recv).
constexpr std::string_view kSend = "send", kReceive = "recv";

// The worker's point-to-point calls in issue order (true: a send).
std::vector<bool> PointToPointOrder(const WorkerTable& table, size_t worker) {
  std::vector<bool> sends;
  for (const CollectiveEntry& c : table.collectives(worker)) {
    std::string_view name = table.name(c.name);
    if (name == kSend || name == kReceive) sends.push_back(name == kSend);
  }
  return sends;
}

RoleSignature SignatureOf(const WorkerTable& table, size_t worker) {
  RoleSignature s;
  for (const FunctionEntry& f : table.functions(worker)) {
    bool work = f.category != Category::kHost && f.category != Category::kDataloader;
    if (work && f.calls_per_iter > 0 && !IsFoldedTail(table.name(f.name))) s.operations.push_back(f.name);
  }
  std::sort(s.operations.begin(), s.operations.end());
  s.operations.erase(std::unique(s.operations.begin(), s.operations.end()), s.operations.end());
  std::vector<StringId> calls;
  for (const CollectiveEntry& c : table.collectives(worker)) calls.push_back(c.name);
  std::sort(calls.begin(), calls.end());
  double iterations = std::max(table.row(worker).iterations, 1);
  for (size_t i = 0; i < calls.size();) {
    size_t j = i;
    while (j < calls.size() && calls[j] == calls[i]) ++j;
    s.collectives.emplace_back(calls[i], static_cast<double>(j - i) / iterations);
    i = j;
  }
  s.p2p_sends = PointToPointOrder(table, worker);
  uint32_t p2p = 0;
  for (const CollectiveEntry& c : table.collectives(worker)) {
    std::string_view name = table.name(c.name);
    if (name == kSend || name == kReceive) {
      ++p2p;
    } else {
      s.p2p_before_collective.push_back(p2p);
    }
  }
  if (p2p == 0) s.p2p_before_collective.clear();
  return s;
}

// |a ∩ b| / min(|a|, |b|) of two sorted sets; 1 when either is empty (nothing to tell apart).
double Containment(const std::vector<StringId>& a, const std::vector<StringId>& b) {
  if (a.empty() || b.empty()) return 1;
  size_t common = 0, i = 0, j = 0;
  while (i < a.size() && j < b.size()) {
    if (a[i] == b[j]) {
      ++common, ++i, ++j;
    } else if (a[i] < b[j]) {
      ++i;
    } else {
      ++j;
    }
  }
  return static_cast<double>(common) / static_cast<double>(std::min(a.size(), b.size()));
}

// Σ min / Σ max of two collective-count lists; 1 when neither issues collectives.
double CollectiveOverlap(const std::vector<std::pair<StringId, double>>& a,
                         const std::vector<std::pair<StringId, double>>& b) {
  if (a.empty() && b.empty()) return 1;
  double low = 0, high = 0;
  size_t i = 0, j = 0;
  while (i < a.size() || j < b.size()) {
    if (j == b.size() || (i < a.size() && a[i].first < b[j].first)) {
      high += a[i++].second;
    } else if (i == a.size() || b[j].first < a[i].first) {
      high += b[j++].second;
    } else {
      low += std::min(a[i].second, b[j].second);
      high += std::max(a[i].second, b[j].second);
      ++i, ++j;
    }
  }
  return low / high;
}

// One order of sends and receives, as far as both windows go (a window can close early).
bool SamePointToPointOrder(const std::vector<bool>& a, const std::vector<bool>& b) {
  size_t n = std::min(a.size(), b.size());
  return std::equal(a.begin(), a.begin() + static_cast<std::ptrdiff_t>(n), b.begin());
}

// Below this ratio two ranks' point-to-point calls per step are two positions' schedules: an inner
// stage issues twice an edge stage's (1/2), one schedule the same count (1), a window's cut none
// (both are counted up to the same number of other collectives); halfway between, as a ratio.
const double kSamePointToPointRate = 1 / std::sqrt(2.0);

// Point-to-point calls an async collective's start can move across it on the backend's thread
// (its begin time orders the sequence): a call each way.
constexpr uint32_t kPointToPointJitter = 2;

// As many sends and receives between their collectives, counted up to the collective both reached.
bool SamePointToPointRate(const std::vector<uint32_t>& a, const std::vector<uint32_t>& b) {
  size_t n = std::min(a.size(), b.size());
  if (n == 0) return true;
  uint32_t low = std::min(a[n - 1], b[n - 1]), high = std::max(a[n - 1], b[n - 1]);
  return high - low <= kPointToPointJitter || low >= kSamePointToPointRate * high;
}

bool SameRole(const RoleSignature& a, const RoleSignature& b) {
  return SamePointToPointOrder(a.p2p_sends, b.p2p_sends) &&
         SamePointToPointRate(a.p2p_before_collective, b.p2p_before_collective) &&
         Containment(a.operations, b.operations) >= kSameRoleOverlap &&
         CollectiveOverlap(a.collectives, b.collectives) >= kSameRoleOverlap;
}

}  // namespace

std::vector<WorkerGroup> GroupWorkers(const WorkerTable& table) {
  struct Candidate {
    bool has_device;
    StringId role;
    RoleSignature signature;
    WorkerGroup group;
  };
  std::vector<Candidate> groups;
  for (size_t i = 0; i < table.size(); ++i) {
    const WorkerRow& row = table.row(i);
    RoleSignature signature = SignatureOf(table, i);
    Candidate* home = nullptr;
    for (Candidate& g : groups) {
      if (g.has_device == row.has_device && g.role == row.group && SameRole(g.signature, signature)) {
        home = &g;
        break;
      }
    }
    if (home == nullptr) {
      groups.push_back({row.has_device, row.group, std::move(signature), {&table, {}}});
      home = &groups.back();
    }
    home->group.members.push_back(static_cast<uint32_t>(i));
  }
  std::vector<WorkerGroup> out;
  out.reserve(groups.size());
  for (Candidate& g : groups) out.push_back(std::move(g.group));
  std::stable_sort(out.begin(), out.end(),
                   [](const WorkerGroup& a, const WorkerGroup& b) { return a.size() > b.size(); });
  return out;
}

bool ExchangesPointToPoint(const WorkerGroup& group) {
  if (group.size() == 0) return false;
  return std::all_of(group.members.begin(), group.members.end(), [&](uint32_t member) {
    std::vector<bool> order = PointToPointOrder(*group.table, member);
    return std::count(order.begin(), order.end(), true) > 0 && std::count(order.begin(), order.end(), false) > 0;
  });
}

double MedianIterationS(const WorkerGroup& group) {
  std::vector<double> times;
  times.reserve(group.size());
  for (size_t k = 0; k < group.size(); ++k) times.push_back(group.row(k).iteration_s);
  return MedianInPlace(times);
}

std::vector<double> CategoryBetas(const WorkerGroup& group, Category category) {
  std::vector<double> betas;
  betas.reserve(group.size());
  for (size_t k = 0; k < group.size(); ++k) betas.push_back(group.row(k).beta(category));
  return betas;
}

std::vector<std::vector<double>> FunctionBetaColumns(const WorkerGroup& group,
                                                     const std::vector<std::pair<StringId, Category>>& functions) {
  std::vector<std::vector<double>> columns(functions.size(), std::vector<double>(group.size(), 0.0));
  for (size_t k = 0; k < group.size(); ++k) {
    for (const FunctionEntry& f : group.functions(k)) {
      for (size_t c = 0; c < functions.size(); ++c) {
        if (functions[c].first == f.name && functions[c].second == f.category) columns[c][k] = f.beta;
      }
    }
  }
  return columns;
}

}  // namespace eroica
