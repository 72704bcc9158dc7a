#include "localize/work_signals.h"

#include <fmt/core.h>

#include <map>

#include "localize/robust_stats.h"

namespace eroica {
namespace {

// Counts per iteration a worker reports for itself, against the group's median.
struct Signal {
  const char* label;
  double (*read)(const WorkerPattern&);
};

constexpr Signal kSignals[] = {
    {"data-loader ops per iteration", [](const WorkerPattern& w) { return w.dataloader_ops_per_iter; }},
    {"compute calls per iteration", [](const WorkerPattern& w) { return w.compute_calls_per_iter; }},
};

// Shapes: the majority's shapes hash for a function, when most workers agree on one.
bool ShapesDiffer(const WorkerGroup& group, const WorkerPattern& suspect, std::string* function) {
  for (const FunctionPattern& f : suspect.functions) {
    if (f.category != Category::kCompute || f.shapes_hash == 0 || f.beta < 0.01) continue;
    std::map<uint32_t, size_t> votes;
    for (const WorkerPattern* w : group.workers) {
      if (const FunctionPattern* g = FindFunction(*w, f.name, f.category); g && g->shapes_hash != 0) {
        ++votes[g->shapes_hash];
      }
    }
    for (auto [hash, count] : votes) {
      if (hash != f.shapes_hash && count * 2 > group.workers.size()) {
        *function = f.name;
        return true;
      }
    }
  }
  return false;
}

}  // namespace

WorkComparison CompareWork(const WorkerGroup& group, const WorkerPattern& suspect, double ratio) {
  WorkComparison out;
  for (const Signal& signal : kSignals) {
    std::vector<double> values;
    for (const WorkerPattern* w : group.workers) {
      if (w != &suspect) values.push_back(signal.read(*w));
    }
    double median = MedianInPlace(values);
    double mine = signal.read(suspect);
    if (median > 0 && mine >= ratio * median && mine - median >= 2) {
      out.more_work = true;
      out.evidence = fmt::format("{} {:.0f} vs {:.0f} on its peers ({:.1f}x)", signal.label, mine,
                                 median, mine / median);
      return out;
    }
  }
  // Bytes moved by its collectives and copies.
  for (const FunctionPattern& f : suspect.functions) {
    if (f.bytes_per_iter <= 0 || f.beta < 0.01) continue;
    std::vector<double> values;
    for (const WorkerPattern* w : group.workers) {
      if (w == &suspect) continue;
      const FunctionPattern* g = FindFunction(*w, f.name, f.category);
      values.push_back(g ? static_cast<double>(g->bytes_per_iter) : 0.0);
    }
    double median = MedianInPlace(values);
    if (median > 0 && static_cast<double>(f.bytes_per_iter) >= ratio * median) {
      out.more_work = true;
      out.evidence = fmt::format("{} moves {:.0f} bytes per iteration vs {:.0f} on its peers", f.name,
                                 static_cast<double>(f.bytes_per_iter), median);
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
