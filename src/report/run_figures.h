// Figures about a whole run that several reports print.
#pragma once

#include <vector>

#include "summary/pattern.h"

namespace eroica {

// Median iteration time over the workers that report one; 0 when none does.
double MedianIterationSeconds(const std::vector<WorkerPattern>& workers);

}  // namespace eroica
