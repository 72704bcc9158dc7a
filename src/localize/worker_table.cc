#include "localize/worker_table.h"

namespace eroica {

void WorkerTable::Add(const WorkerPattern& w) {
  WorkerRow row;
  row.rank = w.rank;
  row.world_size = w.world_size;
  row.has_device = w.has_device;
  row.group = names_.Intern(w.group);
  if (!w.host.empty()) row.host = names_.Intern(w.host);
  row.iterations = w.iterations();
  row.iteration_s = static_cast<float>(w.iteration_s);
  for (int c = 0; c < kCategoryCount; ++c) row.category_beta[c] = static_cast<float>(w.category_beta[c]);
  row.dataloader_ops_per_iter = static_cast<float>(w.dataloader_ops_per_iter);
  row.compute_calls_per_iter = static_cast<float>(w.compute_calls_per_iter);
  row.cpu = w.cpu;
  if (!w.loader_worker_frames.empty()) {
    row.loader_worker_frame = names_.Intern(w.loader_worker_frames.front().location);
    row.loader_worker_share = w.loader_worker_frames.front().share;
  }
  if (!w.other_thread_frames.empty()) {
    row.other_thread_frame = names_.Intern(w.other_thread_frames.front().location);
    row.other_thread_share = w.other_thread_frames.front().share;
  }
  row.functions_begin = static_cast<uint32_t>(functions_.size());
  for (const FunctionPattern& f : w.functions) {
    FunctionEntry e;
    e.name = names_.Intern(f.name);
    e.category = f.category;
    e.host_kind = f.host_kind;
    e.beta = static_cast<float>(f.beta);
    if (f.mu) e.mu = static_cast<float>(*f.mu);
    if (f.sigma) e.sigma = static_cast<float>(*f.sigma);
    e.calls_per_iter = static_cast<float>(f.calls_per_iter);
    e.mean_duration_us = static_cast<float>(f.mean_duration_us);
    e.median_duration_us = static_cast<float>(f.median_duration_us);
    e.low_quartile_duration_us = static_cast<float>(f.low_quartile_duration_us);
    e.bytes_per_iter = static_cast<float>(f.bytes_per_iter);
    e.shapes_hash = f.shapes_hash;
    if (!f.hot_frames.empty()) {
      e.hot_frame = names_.Intern(f.hot_frames.front().location);
      e.hot_share = f.hot_frames.front().share;
    }
    functions_.push_back(e);
  }
  row.functions_count = static_cast<uint32_t>(w.functions.size());
  row.iterations_begin = static_cast<uint32_t>(iteration_betas_.size());
  iteration_betas_.insert(iteration_betas_.end(), w.iteration_category_beta.begin(), w.iteration_category_beta.end());
  row.iterations_count = static_cast<uint32_t>(w.iteration_category_beta.size());
  row.collectives_begin = static_cast<uint32_t>(collectives_.size());
  for (const CollectiveCall& c : w.collectives)
    collectives_.push_back({names_.Intern(c.name), c.duration_us, c.iteration});
  row.collectives_count = static_cast<uint32_t>(w.collectives.size());
  row.code_lines_begin = static_cast<uint32_t>(code_lines_.size());
  for (const CodeFrame& line : w.code_lines)
    code_lines_.push_back({names_.Intern(line.location), line.share, line.depth});
  row.code_lines_count = static_cast<uint32_t>(w.code_lines.size());
  row.code_line_periods = w.code_line_periods;
  rows_.push_back(row);
}

const FunctionEntry* WorkerTable::Find(size_t worker, StringId name, Category category) const {
  for (const FunctionEntry& f : functions(worker)) {
    if (f.name == name && f.category == category) return &f;
  }
  return nullptr;
}

WorkerTable WorkerTableOf(const std::vector<WorkerPattern>& workers) {
  WorkerTable table;
  for (const WorkerPattern& w : workers) table.Add(w);
  return table;
}

}  // namespace eroica
