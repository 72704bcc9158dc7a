#include "localize/function_leads.h"

#include <algorithm>
#include <cstdint>
#include <unordered_map>

#include "summary/function_name.h"

namespace eroica {
namespace {

struct TopTwo {
  double first = 0;
  double second = 0;
  size_t holder = SIZE_MAX;
};

}  // namespace

bool InEveryIteration(double calls_per_iter, int iterations) {
  if (iterations < 2) return true;
  return calls_per_iter * iterations >= iterations - 0.5;
}

std::vector<double> HostFunctionLeads(const WorkerGroup& group) {
  std::unordered_map<StringId, TopTwo> top;
  for (size_t k = 0; k < group.size(); ++k) {
    for (const FunctionEntry& f : group.functions(k)) {
      bool code = f.host_kind == HostKind::kPython || f.host_kind == HostKind::kGc;
      if (f.category != Category::kHost || !code || !InEveryIteration(f, group.row(k).iterations)) continue;
      TopTwo& t = top[f.name];
      if (f.beta > t.first) {
        t.second = t.first;
        t.first = f.beta;
        t.holder = k;
      } else if (f.beta > t.second) {
        t.second = f.beta;
      }
    }
  }
  std::vector<double> leads(group.size(), 0.0);
  for (const auto& [name, t] : top) {
    std::string_view text = group.table->name(name);
    if (t.holder == SIZE_MAX || IsFoldedTail(text) || IsResumePoint(text)) continue;
    leads[t.holder] = std::max(leads[t.holder], t.first - t.second);
  }
  return leads;
}

}  // namespace eroica
