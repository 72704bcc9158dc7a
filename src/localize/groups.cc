#include "localize/groups.h"

#include <algorithm>
#include <functional>

#include "localize/robust_stats.h"

namespace eroica {
namespace {

constexpr double kSameRoleJaccard = 0.5;
constexpr double kSignatureMinBeta = 0.005;

std::vector<size_t> Signature(const WorkerPattern& w) {
  std::vector<size_t> names;
  for (const FunctionPattern& f : w.functions) {
    bool work = f.category == Category::kCompute || f.category == Category::kCommunication;
    if (work && f.beta >= kSignatureMinBeta && !f.name.starts_with("(other")) {
      names.push_back(std::hash<std::string>{}(f.name));
    }
  }
  std::sort(names.begin(), names.end());
  names.erase(std::unique(names.begin(), names.end()), names.end());
  return names;
}

double Jaccard(const std::vector<size_t>& a, const std::vector<size_t>& b) {
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

std::vector<WorkerGroup> GroupWorkers(const std::vector<WorkerPattern>& workers) {
  struct Candidate {
    bool has_device;
    std::string role;
    std::vector<size_t> signature;
    WorkerGroup group;
  };
  std::vector<Candidate> groups;
  for (const WorkerPattern& w : workers) {
    std::vector<size_t> signature = Signature(w);
    Candidate* home = nullptr;
    for (Candidate& g : groups) {
      if (g.has_device == w.has_device && g.role == w.group &&
          Jaccard(g.signature, signature) >= kSameRoleJaccard) {
        home = &g;
        break;
      }
    }
    if (home == nullptr) {
      groups.push_back({w.has_device, w.group, std::move(signature), {}});
      home = &groups.back();
    }
    home->group.workers.push_back(&w);
  }
  std::vector<WorkerGroup> out;
  for (Candidate& g : groups) out.push_back(std::move(g.group));
  std::sort(out.begin(), out.end(), [](const WorkerGroup& a, const WorkerGroup& b) {
    return a.workers.size() > b.workers.size();
  });
  return out;
}

double MedianIterationS(const WorkerGroup& group) {
  std::vector<double> times;
  for (const WorkerPattern* w : group.workers) times.push_back(w->iteration_s);
  return MedianInPlace(times);
}

std::vector<double> CategoryBetas(const WorkerGroup& group, Category category) {
  std::vector<double> betas;
  betas.reserve(group.workers.size());
  for (const WorkerPattern* w : group.workers) betas.push_back(w->category_beta[static_cast<int>(category)]);
  return betas;
}

const FunctionPattern* FindFunction(const WorkerPattern& worker, const std::string& name,
                                    Category category) {
  for (const FunctionPattern& f : worker.functions) {
    if (f.category == category && f.name == name) return &f;
  }
  return nullptr;
}

std::vector<double> FunctionBetas(const WorkerGroup& group, const std::string& name, Category category) {
  std::vector<double> betas;
  betas.reserve(group.workers.size());
  for (const WorkerPattern* w : group.workers) {
    const FunctionPattern* f = FindFunction(*w, name, category);
    betas.push_back(f ? f->beta : 0.0);
  }
  return betas;
}

}  // namespace eroica
