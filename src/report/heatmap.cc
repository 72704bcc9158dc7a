#include "report/heatmap.h"

#include <fmt/core.h>

#include <algorithm>
#include <cmath>
#include <unordered_map>
#include <unordered_set>

namespace eroica {
namespace {

struct NameStats {
  Category category = Category::kHost;
  double sum = 0;
  double max = 0;
};

double Median(std::vector<float> values) {
  if (values.empty()) return 0;
  size_t mid = values.size() / 2;
  std::nth_element(values.begin(), values.begin() + mid, values.end());
  return values[mid];
}

// Finding functions first, then the functions whose largest worker sits furthest above the
// mean (an outlier at any scale), with a nudge towards functions that matter on everyone.
std::vector<HeatmapColumn> ChooseColumns(const std::vector<WorkerPattern>& workers, const Diagnosis& diagnosis,
                                         size_t max_columns) {
  std::unordered_map<std::string, NameStats> stats;
  for (const WorkerPattern& w : workers) {
    for (const FunctionPattern& f : w.functions) {
      NameStats& s = stats[f.name];
      s.category = f.category;
      s.sum += f.beta;
      s.max = std::max(s.max, f.beta);
    }
  }
  double n = static_cast<double>(std::max<size_t>(1, workers.size()));
  std::vector<HeatmapColumn> columns;
  std::unordered_set<std::string> chosen;
  for (const Finding& finding : diagnosis.findings) {
    auto it = stats.find(finding.function);
    if (it == stats.end() || !chosen.insert(finding.function).second) continue;
    columns.push_back({finding.function, it->second.category, 0, true});
    if (columns.size() >= max_columns) return columns;
  }
  std::vector<std::pair<double, std::string>> scored;
  for (const auto& [name, s] : stats) {
    if (chosen.count(name) > 0) continue;
    double mean = s.sum / n;
    scored.push_back({(s.max - mean) + 0.25 * mean, name});
  }
  std::sort(scored.begin(), scored.end(),
            [](const auto& a, const auto& b) { return a.first != b.first ? a.first > b.first : a.second < b.second; });
  for (const auto& [score, name] : scored) {
    if (columns.size() >= max_columns) break;
    columns.push_back({name, stats[name].category, 0, false});
  }
  return columns;
}

// β of every worker (rows) for every column, 0 where the worker does not list the function.
std::vector<float> BetaMatrix(const std::vector<WorkerPattern>& workers, const std::vector<HeatmapColumn>& columns) {
  std::unordered_map<std::string, size_t> index;
  for (size_t c = 0; c < columns.size(); ++c) index[columns[c].name] = c;
  std::vector<float> beta(workers.size() * columns.size(), 0.0f);
  for (size_t w = 0; w < workers.size(); ++w) {
    for (const FunctionPattern& f : workers[w].functions) {
      auto it = index.find(f.name);
      if (it != index.end()) beta[w * columns.size() + it->second] = static_cast<float>(f.beta);
    }
  }
  return beta;
}

// Median per (group, column): workers compare only with their like.
std::vector<float> Deviations(const std::vector<WorkerPattern>& workers, const std::vector<float>& beta,
                              std::vector<HeatmapColumn>* columns) {
  size_t k = columns->size();
  std::unordered_map<std::string, std::vector<size_t>> groups;
  for (size_t w = 0; w < workers.size(); ++w) groups[workers[w].group].push_back(w);
  std::vector<float> deviation(beta.size(), 0.0f);
  std::vector<float> values;
  for (size_t c = 0; c < k; ++c) {
    for (const auto& [group, members] : groups) {
      values.clear();
      for (size_t w : members) values.push_back(beta[w * k + c]);
      float median = static_cast<float>(Median(values));
      for (size_t w : members) deviation[w * k + c] = beta[w * k + c] - median;
    }
    values.clear();
    for (size_t w = 0; w < workers.size(); ++w) values.push_back(beta[w * k + c]);
    (*columns)[c].median_beta = Median(values);
  }
  return deviation;
}

std::vector<HeatmapCell> WorkerCells(size_t w, int rank, size_t k, const std::vector<float>& beta,
                                     const std::vector<float>& deviation) {
  std::vector<HeatmapCell> cells(k);
  for (size_t c = 0; c < k; ++c) cells[c] = {beta[w * k + c], deviation[w * k + c], rank};
  return cells;
}

}  // namespace

Heatmap BuildHeatmap(const std::vector<WorkerPattern>& workers, const Diagnosis& diagnosis,
                     const HeatmapOptions& options) {
  Heatmap map;
  map.workers = static_cast<int>(workers.size());
  if (workers.empty()) return map;
  map.columns = ChooseColumns(workers, diagnosis, options.max_columns);
  size_t k = map.columns.size();
  std::vector<float> beta = BetaMatrix(workers, map.columns);
  std::vector<float> deviation = Deviations(workers, beta, &map.columns);

  std::unordered_set<int> suspects;
  std::vector<size_t> suspect_order;
  for (const Finding& f : diagnosis.findings) {
    if (f.scope != FindingScope::kLocal) continue;
    for (int r : f.workers) suspects.insert(r);
  }
  map.banded = workers.size() > options.max_rows;
  std::vector<size_t> rest;
  for (size_t w = 0; w < workers.size(); ++w) {
    bool suspect = suspects.count(workers[w].rank) > 0;
    if (!map.banded || (suspect && suspect_order.size() < options.max_suspect_rows)) {
      HeatmapRow row{fmt::format("rank {}", workers[w].rank), 1, suspect,
                     WorkerCells(w, workers[w].rank, k, beta, deviation)};
      map.rows.push_back(std::move(row));
      if (suspect) suspect_order.push_back(w);
    } else {
      rest.push_back(w);
    }
  }
  size_t per_band = (rest.size() + options.bands - 1) / std::max<size_t>(1, options.bands);
  for (size_t start = 0; start < rest.size(); start += per_band) {
    size_t end = std::min(rest.size(), start + per_band);
    HeatmapRow row;
    row.worker_count = static_cast<int>(end - start);
    row.label = fmt::format("ranks {}\u2013{}", workers[rest[start]].rank, workers[rest[end - 1]].rank);
    row.cells.resize(k);
    for (size_t c = 0; c < k; ++c) {
      size_t best = rest[start];
      for (size_t i = start; i < end; ++i) {
        if (std::fabs(deviation[rest[i] * k + c]) > std::fabs(deviation[best * k + c])) best = rest[i];
      }
      row.cells[c] = {beta[best * k + c], deviation[best * k + c], workers[best].rank};
      row.suspect = row.suspect || suspects.count(workers[best].rank) > 0;
    }
    map.rows.push_back(std::move(row));
  }
  // A finding's column is scaled to itself, so its suspect is always drawn at full colour; the
  // others to at least a quarter of the table's largest deviation, so noise stays pale.
  double largest = 0;
  for (const HeatmapRow& row : map.rows) {
    for (const HeatmapCell& cell : row.cells) largest = std::max(largest, std::fabs(cell.deviation));
  }
  for (size_t c = 0; c < k; ++c) {
    HeatmapColumn& column = map.columns[c];
    if (!column.from_finding) column.scale = std::max(column.scale, 0.25 * largest);
    for (const HeatmapRow& row : map.rows) column.scale = std::max(column.scale, std::fabs(row.cells[c].deviation));
  }
  return map;
}

}  // namespace eroica
