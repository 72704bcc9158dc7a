#include "localize/own_code_line.h"

#include <algorithm>
#include <cmath>
#include <vector>

#include "base/robust_stats.h"
#include "localize/work_signals.h"
#include "summary/pattern.h"

namespace eroica {
namespace {

// Peers asked at most: a majority of an even sample of a large group is its majority, and each
// peer costs lines² comparisons.
constexpr size_t kMaxPeersAsked = 128;

// How much longer member `suspect`'s training thread was queued for a CPU than its peers' median
// (share of the window); 0 where it or no peer was read.
double QueuedBeyondPeers(const WorkerGroup& group, size_t suspect) {
  auto queued = [&](size_t k) {
    const std::optional<CpuShare>& cpu = group.row(k).cpu;
    return cpu ? static_cast<double>(cpu->main_run_delay) : -1.0;
  };
  if (queued(suspect) < 0) return 0;
  std::vector<double> peers;
  for (size_t k = 0; k < group.size(); ++k) {
    if (k != suspect && queued(k) >= 0) peers.push_back(queued(k));
  }
  return peers.empty() ? 0 : std::max(0.0, queued(suspect) - MedianInPlace(peers));
}

}  // namespace

double LogChanceLineMissed(double line_periods, double sampled_periods, double other_periods) {
  if (!(line_periods > 0 && sampled_periods > 0 && other_periods > 0)) return 0;
  double chance_each = sampled_periods / (sampled_periods + other_periods);
  return line_periods * std::log(chance_each);
}

bool MissingLineMeansNeverRan(double line_periods, double sampled_periods, double other_periods) {
  double log_chance = LogChanceLineMissed(line_periods, sampled_periods, other_periods);
  return log_chance < 0 && log_chance <= std::log(kChanceLineMissed);
}

bool ExtraWorkCanBeCode(const WorkerGroup& group, size_t suspect, const Expectations& e) {
  if (ComputeCalls(group).StandsOut(suspect, e)) return true;
  // Seconds a step beyond the peers' median: ranks' windows differ in length.
  auto excess_s = [&](Category category) {
    auto seconds = [&](size_t k) { return group.row(k).beta(category) * group.row(k).iteration_s; };
    std::vector<double> peers;
    peers.reserve(group.size());
    for (size_t k = 0; k < group.size(); ++k) {
      if (k != suspect) peers.push_back(seconds(k));
    }
    return peers.empty() ? 0.0 : seconds(suspect) - MedianInPlace(peers);
  };
  return excess_s(Category::kHost) >= excess_s(Category::kCompute);
}

std::optional<OwnCodeLine> LineOnlyItRuns(const WorkerGroup& group, size_t suspect, double excess,
                                          const Expectations& e) {
  if (excess <= 0) return std::nullopt;  // no extra work to place
  const double floor = e.min_excess_beta;
  const WorkerTable& table = *group.table;
  const double queued = QueuedBeyondPeers(group, suspect);
  std::vector<OwnCodeLine> lines;
  for (const CodeLineEntry& line : table.code_lines(group.members[suspect])) {
    if (line.share >= excess / 2 && line.share - queued >= floor)
      lines.push_back({line.location, line.share, line.depth});
  }
  if (lines.empty() || !ExtraWorkCanBeCode(group, suspect, e)) return std::nullopt;
  size_t stride = std::max<size_t>(1, group.size() / kMaxPeersAsked);
  const double periods = table.row(group.members[suspect]).code_line_periods;
  for (size_t k = 0; k < group.size(); k += stride) {
    std::span<const CodeLineEntry> theirs = table.code_lines(group.members[k]);
    if (k == suspect || theirs.empty()) continue;
    const double their_periods = table.row(group.members[k]).code_line_periods;
    for (OwnCodeLine& line : lines) {
      ++line.peers_sampled;
      // A line missing from a full list may still have been sampled there, below its last line.
      auto other = std::find_if(theirs.begin(), theirs.end(),
                                [&](const CodeLineEntry& entry) { return entry.location == line.location; });
      bool listed = other != theirs.end();
      if (listed) line.most_a_peer_held = std::max(line.most_a_peer_held, static_cast<double>(other->share));
      if (!listed && theirs.size() < kMaxCodeLines &&
          MissingLineMeansNeverRan(line.share * periods, periods, their_periods)) {
        ++line.peers_without;
      }
    }
  }
  std::optional<OwnCodeLine> best;
  for (const OwnCodeLine& line : lines) {
    if (line.peers_sampled == 0 || 2 * line.peers_without <= line.peers_sampled) continue;
    if (line.most_a_peer_held >= line.share) continue;
    if (!best || line.depth > best->depth || (line.depth == best->depth && line.share > best->share)) best = line;
  }
  return best;
}

}  // namespace eroica
