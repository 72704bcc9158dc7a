// The diagnosis as a Markdown prompt for an AI coding assistant: the findings with their
// numbers, the ranks, the code locations with the surrounding source lines (when readable and
// the job's own code), the run's configuration, and one precise request per category.
// Nothing else is copied in: no environment variables, no files the diagnosis does not name.
#pragma once

#include <string>
#include <vector>

#include "localize/localizer.h"
#include "report/session_info.h"

namespace eroica {

struct PromptOptions {
  std::vector<std::string> source_roots;  // where relative source paths are looked up
  int context_lines = 5;                  // source lines shown on each side of a location
  size_t max_findings = 5;
};

std::string RenderPrompt(const Diagnosis& diagnosis, const LocalizeInput& input, const SessionInfo& session,
                         const PromptOptions& options);

// The request for one finding: what the assistant should do, precisely (exposed for tests).
std::string FindingRequest(const Finding& finding, const Diagnosis& diagnosis, const std::string& where,
                           const std::string& waiting_in);

}  // namespace eroica
