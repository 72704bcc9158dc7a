// Who kept a node's cores busy over the window: the job's own processes (every rank on the node
// and its DataLoader workers, python/eroica/cpu_share.py's readings) or processes outside it.
// A rank's trace shows it waiting, or its ops running slower, the same way whether a peer was
// slow or a neighbour held the processors; what the node's cores did in the meantime tells them
// apart.
#pragma once

#include <optional>
#include <string>
#include <vector>

#include "localize/worker_table.h"

namespace eroica {

struct NodeCores {
  std::string host;
  double cores = 0;  // online cores
  double busy = 0;   // cores' worth busy over the window (all processes, the kernel's threads too)
  double job = 0;    // cores' worth the job's ranks on the node and their loader workers used
  double outside() const { return busy > job ? busy - job : 0; }
  double busy_share() const { return cores > 0 ? busy / cores : 0; }
};

// The node `host` names, from its ranks in `table` (every rank of the job, whatever its role);
// nullopt where the host is not named or one of its ranks has no CPU reading.
std::optional<NodeCores> ReadNodeCores(const WorkerTable& table, StringId host);

// Every named node of `table` whose ranks were all read, in the order their first rank appears.
std::vector<NodeCores> ReadEveryNodesCores(const WorkerTable& table);

}  // namespace eroica
