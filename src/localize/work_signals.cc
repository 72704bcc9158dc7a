#include "localize/work_signals.h"

#include <fmt/core.h>

#include <map>

#include "base/robust_stats.h"

namespace eroica {
namespace {

// Counts per iteration a worker reports for itself, against the group's median.
struct Signal {
  const char* label;
  float (*read)(const WorkerRow&);
};

constexpr Signal kSignals[] = {
    {"data-loader ops per iteration", [](const WorkerRow& w) { return w.dataloader_ops_per_iter; }},
    {"compute calls per iteration", [](const WorkerRow& w) { return w.compute_calls_per_iter; }},
};

double PeerMedian(const WorkerGroup& group, size_t suspect, const auto& read) {
  std::vector<double> values;
  values.reserve(group.size());
  for (size_t k = 0; k < group.size(); ++k) {
    if (k != suspect) values.push_back(read(k));
  }
  return MedianInPlace(values);
}

// The majority's shapes for a function differ from the suspect's.
bool ShapesDiffer(const WorkerGroup& group, size_t suspect, std::string* function) {
  const WorkerTable& table = *group.table;
  for (const FunctionEntry& f : group.functions(suspect)) {
    if (f.category != Category::kCompute || f.shapes_hash == 0 || f.beta < 0.01f) continue;
    std::map<uint32_t, size_t> votes;
    for (size_t k = 0; k < group.size(); ++k) {
      const FunctionEntry* g = table.Find(group.members[k], f.name, f.category);
      if (g && g->shapes_hash != 0) ++votes[g->shapes_hash];
    }
    for (auto [hash, count] : votes) {
      if (hash != f.shapes_hash && count * 2 > group.size()) {
        *function = std::string(table.name(f.name));
        return true;
      }
    }
  }
  return false;
}

}  // namespace

WorkComparison CompareWork(const WorkerGroup& group, size_t suspect, double ratio) {
  WorkComparison out;
  const WorkerTable& table = *group.table;
  for (const Signal& signal : kSignals) {
    double median = PeerMedian(group, suspect, [&](size_t k) { return signal.read(group.row(k)); });
    double mine = signal.read(group.row(suspect));
    if (median > 0 && mine >= ratio * median && mine - median >= 2) {
      out.more_work = true;
      out.evidence =
          fmt::format("{} {:.0f} vs {:.0f} on its peers ({:.1f}x)", signal.label, mine, median, mine / median);
      return out;
    }
  }
  // Bytes moved by its collectives and copies.
  for (const FunctionEntry& f : group.functions(suspect)) {
    if (f.bytes_per_iter <= 0 || f.beta < 0.01f) continue;
    double median = PeerMedian(group, suspect, [&](size_t k) {
      const FunctionEntry* g = table.Find(group.members[k], f.name, f.category);
      return g ? static_cast<double>(g->bytes_per_iter) : 0.0;
    });
    if (median > 0 && f.bytes_per_iter >= ratio * median) {
      out.more_work = true;
      out.evidence = fmt::format("{} moves {:.0f} bytes per iteration vs {:.0f} on its peers", table.name(f.name),
                                 f.bytes_per_iter, median);
      return out;
    }
  }
  std::string function;
  if (ShapesDiffer(group, suspect, &function)) {
    out.more_work = true;
    out.evidence = fmt::format("{} runs on input shapes that differ from the majority's", function);
  }
  return out;
}

}  // namespace eroica
