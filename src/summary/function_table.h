// Interns functions (category + stable name) and accumulates their per-call figures while the
// summarizer walks the events.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <unordered_map>
#include <vector>

#include "summary/category.h"
#include "summary/duration_histogram.h"

namespace eroica {

struct FunctionStats {
  std::string name;
  Category category = Category::kHost;
  HostKind host_kind = HostKind::kNone;
  int64_t calls = 0;
  int64_t total_duration_ns = 0;
  DurationHistogram durations;  // of its calls, for the median call
  int64_t bytes = 0;
  uint32_t shapes_hash = 0;
  int64_t owned_ns = 0;      // time on the critical path
  std::optional<double> mu;  // utilisation of its resource while it owns the path
  std::optional<double> sigma;
};

class FunctionTable {
 public:
  uint32_t Intern(Category category, HostKind host_kind, const std::string& name);
  FunctionStats& operator[](uint32_t index) { return functions_[index]; }
  const std::vector<FunctionStats>& all() const { return functions_; }
  std::vector<FunctionStats>& all() { return functions_; }

 private:
  std::unordered_map<std::string, uint32_t> index_;
  std::vector<FunctionStats> functions_;
};

}  // namespace eroica
