#include "localize/groups.h"

#include <algorithm>

#include "base/robust_stats.h"
#include "summary/function_name.h"

namespace eroica {
namespace {

constexpr double kSameRoleJaccard = 0.5;
constexpr float kSignatureMinBeta = 0.005f;

std::vector<StringId> Signature(const WorkerTable& table, size_t worker) {
  std::vector<StringId> names;
  for (const FunctionEntry& f : table.functions(worker)) {
    bool work = f.category == Category::kCompute || f.category == Category::kCommunication;
    if (work && f.beta >= kSignatureMinBeta && !IsFoldedTail(table.name(f.name))) {
      names.push_back(f.name);
    }
  }
  std::sort(names.begin(), names.end());
  names.erase(std::unique(names.begin(), names.end()), names.end());
  return names;
}

double Jaccard(const std::vector<StringId>& a, const std::vector<StringId>& b) {
  if (a.empty() && b.empty()) return 1;
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
  return static_cast<double>(common) / static_cast<double>(a.size() + b.size() - common);
}

}  // namespace

std::vector<WorkerGroup> GroupWorkers(const WorkerTable& table) {
  struct Candidate {
    bool has_device;
    StringId role;
    std::vector<StringId> signature;
    WorkerGroup group;
  };
  std::vector<Candidate> groups;
  for (size_t i = 0; i < table.size(); ++i) {
    const WorkerRow& row = table.row(i);
    std::vector<StringId> signature = Signature(table, i);
    Candidate* home = nullptr;
    for (Candidate& g : groups) {
      if (g.has_device == row.has_device && g.role == row.group &&
          Jaccard(g.signature, signature) >= kSameRoleJaccard) {
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
