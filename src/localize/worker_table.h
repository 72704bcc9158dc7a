// The workers localization compares, stored column-wise so that a million of them fit in a few
// GB: function and collective names are interned once for all workers, and each worker's
// functions, per-iteration shares and collective calls are slices of shared arrays.
#pragma once

#include <array>
#include <cmath>
#include <cstdint>
#include <optional>
#include <span>
#include <string>
#include <vector>

#include "base/interner.h"
#include "summary/pattern.h"

namespace eroica {

struct FunctionEntry {
  StringId name = 0;
  Category category = Category::kHost;
  HostKind host_kind = HostKind::kNone;
  float beta = 0;
  float mu = NAN;  // NaN: no hardware samples
  float sigma = NAN;
  float calls_per_iter = 0;
  float mean_duration_us = 0;
  float median_duration_us = 0;        // 0: unknown
  float low_quartile_duration_us = 0;  // 0: unknown (patterns before version 5)
  float bytes_per_iter = 0;
  uint32_t shapes_hash = 0;
  StringId hot_frame = Interner::kEmpty;  // the top frame stack samples found here (HotFrame)
  float hot_share = 0;

  bool has_mu() const { return !std::isnan(mu); }
};

// A line of the job's code on the training thread's samples (CodeFrame).
struct CodeLineEntry {
  StringId location = 0;
  float share = 0;
  uint32_t depth = 0;
};

struct CollectiveEntry {
  StringId name = 0;
  float duration_us = 0;
  int32_t iteration = -1;  // CollectiveCall::iteration
};

struct WorkerRow {
  int rank = -1;
  int world_size = -1;
  bool has_device = false;
  StringId group = 0;
  StringId host = Interner::kEmpty;  // kEmpty: not named
  int iterations = 0;
  float iteration_s = 0;
  std::array<float, kCategoryCount> category_beta{};
  float dataloader_ops_per_iter = 0;
  float compute_calls_per_iter = 0;
  uint32_t functions_begin = 0, functions_count = 0;
  uint32_t iterations_begin = 0, iterations_count = 0;
  uint32_t collectives_begin = 0, collectives_count = 0;
  uint32_t code_lines_begin = 0, code_lines_count = 0;
  float code_line_periods = 0;  // WorkerPattern::code_line_periods
  std::optional<CpuShare> cpu;  // who had the processor over the window, when read
  // Its DataLoader workers' top frame over the window (WorkerPattern::loader_worker_frames).
  StringId loader_worker_frame = Interner::kEmpty;
  float loader_worker_share = 0;
  // Its training process's other Python threads' top frame (WorkerPattern::other_thread_frames).
  StringId other_thread_frame = Interner::kEmpty;
  float other_thread_share = 0;

  float beta(Category c) const { return category_beta[static_cast<size_t>(c)]; }
};

class WorkerTable {
 public:
  void Add(const WorkerPattern& worker);

  size_t size() const { return rows_.size(); }
  bool empty() const { return rows_.empty(); }
  const WorkerRow& row(size_t i) const { return rows_[i]; }
  std::span<const FunctionEntry> functions(size_t i) const {
    return {functions_.data() + rows_[i].functions_begin, rows_[i].functions_count};
  }
  std::span<const std::array<float, kCategoryCount>> iteration_betas(size_t i) const {
    return {iteration_betas_.data() + rows_[i].iterations_begin, rows_[i].iterations_count};
  }
  std::span<const CollectiveEntry> collectives(size_t i) const {
    return {collectives_.data() + rows_[i].collectives_begin, rows_[i].collectives_count};
  }
  // The training thread's sampled lines (WorkerPattern::code_lines), most time first.
  std::span<const CodeLineEntry> code_lines(size_t i) const {
    return {code_lines_.data() + rows_[i].code_lines_begin, rows_[i].code_lines_count};
  }
  std::string_view name(StringId id) const { return names_.Get(id); }
  // The worker's entry for a function, or nullptr.
  const FunctionEntry* Find(size_t worker, StringId name, Category category) const;

 private:
  Interner names_;
  std::vector<WorkerRow> rows_;
  std::vector<FunctionEntry> functions_;
  std::vector<std::array<float, kCategoryCount>> iteration_betas_;
  std::vector<CollectiveEntry> collectives_;
  std::vector<CodeLineEntry> code_lines_;
};

// A table of every worker in `workers`: what callers that kept only full patterns compare.
WorkerTable WorkerTableOf(const std::vector<WorkerPattern>& workers);

}  // namespace eroica
