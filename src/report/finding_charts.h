// The numbers behind a finding's charts, taken from every worker's pattern: the distribution
// of the finding's function β (and μ/σ when hardware samples gave them) across workers, and
// the suspect's per-iteration share of the finding's category against its peers' (a real
// fault persists across iterations; noise moves around).
#pragma once

#include <optional>
#include <string>
#include <vector>

#include "localize/finding.h"
#include "report/svg_line_chart.h"
#include "report/svg_strip.h"
#include "summary/pattern.h"

namespace eroica {

// β of the finding's function on every worker; when no worker lists the function, the β of
// the finding's category instead (the axis label says which). Empty when neither applies.
StripPlot BetaDistribution(const Finding& finding, const std::vector<WorkerPattern>& workers);

// μ (with σ) of the finding's function, when at least one worker has it.
std::optional<StripPlot> UtilisationDistribution(const Finding& finding, const std::vector<WorkerPattern>& workers);

// Share of the finding's category in each profiled iteration: the first suspect against the
// median and the maximum of the other workers. Empty series when there is no such data.
LineChart PersistenceChart(const Finding& finding, const std::vector<WorkerPattern>& workers);

// The finding's resource category: its own when it is one, else its function's category.
std::optional<Category> ResourceOf(const Finding& finding, const std::vector<WorkerPattern>& workers);

}  // namespace eroica
