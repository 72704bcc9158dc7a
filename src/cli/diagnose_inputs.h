// Gathers what `diagnose` reads from its paths: traces (summarized here), pattern files and
// bundles, hang stack dumps, and session metadata. Our own outputs in a session folder
// (report.json, *.meta.json, session.json) are recognised and skipped.
#pragma once

#include <string>
#include <vector>

#include "base/status.h"
#include "localize/localizer.h"

namespace eroica {

// Errors only when nothing usable was found; unusable files become warnings. Every pattern goes
// into the compact table; `keep_patterns` also keeps the full patterns (reports need them; a
// million-worker diagnosis does not).
StatusOr<LocalizeInput> CollectDiagnoseInputs(const std::vector<std::string>& paths, int threads,
                                              bool keep_patterns = false);

}  // namespace eroica
