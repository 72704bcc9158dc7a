#include "diff/neighbour_growth.h"

#include <fmt/core.h>

#include "localize/cpu_contention.h"
#include "localize/worker_table.h"

namespace eroica {

std::optional<NeighbourGrowth> FindNeighbourGrowth(const std::vector<WorkerPattern>& base,
                                                   const std::vector<WorkerPattern>& now) {
  std::vector<NodeCores> then_nodes = ReadEveryNodesCores(WorkerTableOf(base));
  std::optional<NeighbourGrowth> most;
  double most_past = 0;
  for (const NodeCores& node : ReadEveryNodesCores(WorkerTableOf(now))) {
    if (node.busy_share() < kBusyCoresShare) continue;
    for (const NodeCores& then : then_nodes) {
      if (then.host != node.host) continue;
      double past = node.outside() - then.outside() - node.job;
      if (past > most_past) {
        most_past = past;
        most = NeighbourGrowth{.then = then, .now = node};
      }
    }
  }
  return most;
}

std::string NeighbourGrowthNote(const NeighbourGrowth& growth) {
  return fmt::format(
      "against the baseline: processes outside the job held {:.2f} of node {}'s {:.0f} cores over this window, "
      "{:.2f} at the baseline, more than the job's own processes now ran on there ({:.2f}; {:.2f} then): the node "
      "is shared with other work, whose processors the job's ranks wait for; every rank's ops and collectives "
      "stretch alike, not for the job's code or the network",
      growth.now.outside(), growth.now.host, growth.now.cores, growth.then.outside(), growth.now.job,
      growth.then.job);
}

}  // namespace eroica
