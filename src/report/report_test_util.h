// Small synthetic inputs for the report tests: data-parallel workers with one straggler.
#pragma once

#include <string>
#include <vector>

#include "localize/finding.h"
#include "summary/pattern.h"

namespace eroica {

inline WorkerPattern TestWorker(int rank, double dataloader, double comm, const std::string& extra_name = "",
                                double extra_beta = 0) {
  WorkerPattern w;
  w.rank = rank;
  w.world_size = 8;
  w.iteration_s = 0.2;
  w.window_ns = 1'000'000'000;
  w.step_ids = {10, 11, 12, 13, 14};
  auto add = [&](const std::string& name, Category c, double beta) {
    FunctionPattern f;
    f.name = name;
    f.category = c;
    f.beta = beta;
    w.functions.push_back(f);
    w.category_beta[static_cast<int>(c)] += beta;
  };
  add("aten::addmm", Category::kCompute, 0.5);
  add("enumerate(DataLoader)#_SingleProcessDataLoaderIter.__next__", Category::kDataloader, dataloader);
  add("allreduce", Category::kCommunication, comm);
  if (!extra_name.empty()) add(extra_name, Category::kHost, extra_beta);
  for (int i = 0; i < 5; ++i) {
    std::array<float, kCategoryCount> shares{};
    shares[static_cast<int>(Category::kDataloader)] = static_cast<float>(dataloader);
    shares[static_cast<int>(Category::kCommunication)] = static_cast<float>(comm);
    w.iteration_category_beta.push_back(shares);
  }
  return w;
}

// Eight workers; rank 3's data loader is slow and the others wait for it.
inline std::vector<WorkerPattern> TestWorkers(int n = 8, int straggler = 3) {
  std::vector<WorkerPattern> workers;
  for (int r = 0; r < n; ++r) {
    double jitter = 0.002 * (r % 3);
    workers.push_back(r == straggler ? TestWorker(r, 0.30, 0.05) : TestWorker(r, 0.05 + jitter, 0.30 - jitter));
  }
  return workers;
}

inline Finding TestFinding(int rank = 3) {
  Finding f;
  f.scope = FindingScope::kLocal;
  f.category = FindingCategory::kDataloader;
  f.workers = {rank};
  f.function = "enumerate(DataLoader)#_SingleProcessDataLoaderIter.__next__";
  f.impact_s_per_iter = 0.05;
  f.beta = 0.30;
  f.peer_beta = 0.05;
  f.differential_distance = 12;
  f.evidence = "rank 3: dataloader takes 0.30 of an iteration vs peer median 0.05";
  f.action = "Check rank 3's input pipeline.";
  return f;
}

inline Diagnosis TestDiagnosis(int workers = 8) {
  Diagnosis d;
  d.workers = workers;
  d.world_size = workers;
  d.findings.push_back(TestFinding());
  return d;
}

}  // namespace eroica
