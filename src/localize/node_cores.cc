#include "localize/node_cores.h"

#include <unordered_map>

namespace eroica {

std::vector<NodeCores> ReadEveryNodesCores(const WorkerTable& table) {
  // One pass: tens of thousands of ranks on thousands of nodes.
  std::vector<NodeCores> nodes;
  std::vector<bool> read;  // every rank of the node had a reading
  std::unordered_map<StringId, size_t> index;
  for (size_t k = 0; k < table.size(); ++k) {
    const WorkerRow& row = table.row(k);
    if (row.host == Interner::kEmpty) continue;
    auto [it, added] = index.emplace(row.host, nodes.size());
    if (added) {
      nodes.push_back(NodeCores{.host = std::string(table.name(row.host))});
      read.push_back(true);
    }
    NodeCores& node = nodes[it->second];
    if (!row.cpu || row.cpu->cpus <= 0) {
      read[it->second] = false;
      continue;
    }
    if (node.cores <= 0) {
      node.cores = row.cpu->cpus;
      node.busy = static_cast<double>(row.cpu->host_busy) * row.cpu->cpus;
    }
    node.job += static_cast<double>(row.cpu->process_cpu) + static_cast<double>(row.cpu->loader_cpu);
  }
  std::vector<NodeCores> out;
  for (size_t n = 0; n < nodes.size(); ++n) {
    if (read[n]) out.push_back(std::move(nodes[n]));
  }
  return out;
}

std::optional<NodeCores> ReadNodeCores(const WorkerTable& table, StringId host) {
  if (host == Interner::kEmpty) return std::nullopt;
  for (NodeCores& node : ReadEveryNodesCores(table)) {
    if (node.host == table.name(host)) return std::move(node);
  }
  return std::nullopt;
}

}  // namespace eroica
