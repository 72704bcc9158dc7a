#include "diff/neighbour_growth.h"

#include <fmt/core.h>

#include <algorithm>

#include "localize/cpu_contention.h"
#include "localize/worker_table.h"

namespace eroica {

std::optional<NeighbourGrowth> FindNeighbourGrowth(const std::vector<WorkerPattern>& base,
                                                   const std::vector<WorkerPattern>& now) {
  if (std::any_of(now.begin(), now.end(), [](const WorkerPattern& w) { return w.has_device; })) return std::nullopt;
  std::vector<NodeCores> then_nodes = ReadEveryNodesCores(WorkerTableOf(base));
  std::optional<NeighbourGrowth> most;
  double most_grown = 0;
  for (const NodeCores& node : ReadEveryNodesCores(WorkerTableOf(now))) {
    if (node.busy_share() < kBusyCoresShare) continue;
    for (const NodeCores& then : then_nodes) {
      if (then.host != node.host || node.job >= then.job) continue;
      double grown = node.outside() - then.outside();
      if (grown >= (1.0 - kBusyCoresShare) * node.cores && grown > most_grown) {
        most_grown = grown;
        most = NeighbourGrowth{.then = then, .now = node};
      }
    }
  }
  return most;
}

bool ALocalFindingExplains(const Diagnosis& diagnosis, double slowdown_ms, double explains_share) {
  return std::any_of(diagnosis.findings.begin(), diagnosis.findings.end(), [&](const Finding& f) {
    return !f.standing && f.scope == FindingScope::kLocal && f.impact_s_per_iter * 1e3 >= explains_share * slowdown_ms;
  });
}

std::string NeighbourGrowthNote(const NeighbourGrowth& growth) {
  return fmt::format(
      "against the baseline: processes outside the job held {:.2f} of node {}'s {:.0f} cores over this window, "
      "{:.2f} at the baseline, while the job's own processes there ran on {:.2f} ({:.2f} then): the node is "
      "busier with other work (other programs, or the kernel's threads, which also write back the job's own "
      "files), whose processors the job's ranks wait for; every rank's ops and collectives stretch alike, not "
      "for the job's code or the network",
      growth.now.outside(), growth.now.host, growth.now.cores, growth.then.outside(), growth.now.job, growth.then.job);
}

std::string NeighbourSlowedBy(const NeighbourGrowth& growth, double slowdown_percent) {
  return fmt::format(
      "{:+.0f}% a step since the baseline: its node {} is shared, processes outside the job held {:.2f} of its {:.0f} "
      "cores ({:.2f} at the baseline)",
      slowdown_percent, growth.now.host, growth.now.outside(), growth.now.cores, growth.then.outside());
}

}  // namespace eroica
