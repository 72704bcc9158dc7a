#include "localize/node_cores.h"

#include <algorithm>

namespace eroica {

std::optional<NodeCores> ReadNodeCores(const WorkerTable& table, StringId host) {
  if (host == Interner::kEmpty) return std::nullopt;
  std::optional<NodeCores> node;
  for (size_t k = 0; k < table.size(); ++k) {
    const WorkerRow& row = table.row(k);
    if (row.host != host) continue;
    if (!row.cpu || row.cpu->cpus <= 0) return std::nullopt;
    if (!node) {
      node = NodeCores{.host = std::string(table.name(host)),
                       .cores = row.cpu->cpus,
                       .busy = static_cast<double>(row.cpu->host_busy) * row.cpu->cpus};
    }
    node->job += static_cast<double>(row.cpu->process_cpu) + static_cast<double>(row.cpu->loader_cpu);
  }
  return node;
}

std::vector<NodeCores> ReadEveryNodesCores(const WorkerTable& table) {
  std::vector<StringId> hosts;
  for (size_t k = 0; k < table.size(); ++k) {
    StringId host = table.row(k).host;
    if (host != Interner::kEmpty && std::find(hosts.begin(), hosts.end(), host) == hosts.end()) hosts.push_back(host);
  }
  std::vector<NodeCores> nodes;
  for (StringId host : hosts) {
    if (std::optional<NodeCores> node = ReadNodeCores(table, host)) nodes.push_back(std::move(*node));
  }
  return nodes;
}

}  // namespace eroica
