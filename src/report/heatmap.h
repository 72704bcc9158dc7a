// The data of the report's heat map: workers (rows) × the functions that tell them apart
// (columns), each cell the worker's β minus the median β of its peers (workers of the same
// group). Beyond max_rows workers, the suspects keep their own rows and the rest are folded
// into bands of neighbouring ranks whose cell shows the band's most extreme worker, so an
// outlier can never be averaged away and the table never grows past ~100 rows. Colours are
// scaled per column (a finding's column to itself; the others to at least a quarter of the
// largest deviation in the table): the suspect stands out in its own function even when
// another one (typically the peers' waiting in collectives) moves far more time.
#pragma once

#include <cstddef>
#include <string>
#include <vector>

#include "localize/finding.h"
#include "summary/pattern.h"

namespace eroica {

struct HeatmapColumn {
  std::string name;
  Category category = Category::kHost;
  double median_beta = 0;  // over all workers
  bool from_finding = false;
  double scale = 0.01;  // |deviation| drawn at full colour in this column (≥ 1 point)
};

struct HeatmapCell {
  double beta = 0;
  double deviation = 0;  // β − the median of the worker's group
  int rank = -1;         // the worker shown (for a band: its most extreme one)
};

struct HeatmapRow {
  std::string label;  // "rank 7", "ranks 64–127"
  int worker_count = 1;
  bool suspect = false;
  std::vector<HeatmapCell> cells;  // one per column
};

struct Heatmap {
  std::vector<HeatmapColumn> columns;
  std::vector<HeatmapRow> rows;
  int workers = 0;
  bool banded = false;
};

struct HeatmapOptions {
  size_t max_columns = 12;
  size_t max_rows = 64;  // more workers than this are banded
  size_t max_suspect_rows = 16;
  size_t bands = 48;
};

Heatmap BuildHeatmap(const std::vector<WorkerPattern>& workers, const Diagnosis& diagnosis,
                     const HeatmapOptions& options = {});

}  // namespace eroica
