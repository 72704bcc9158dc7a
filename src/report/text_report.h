// The default terminal report: one line per finding, most impactful first, then the evidence.
#pragma once

#include <string>

#include "localize/finding.h"

namespace eroica {

std::string FormatTextReport(const Diagnosis& diagnosis);

// The one-line verdict (also what the online hooks log on rank 0).
std::string OneLineVerdict(const Diagnosis& diagnosis);

}  // namespace eroica
