// Shared by the commands that present a diagnosis (report, prompt, annotate): gather the
// inputs exactly as `diagnose` does, then localize. Header-only so each *_command.cc stays
// self-contained.
#pragma once

#include <string>
#include <algorithm>
#include <thread>
#include <vector>

#include "base/status.h"
#include "cli/diagnose_inputs.h"
#include "localize/localizer.h"

namespace eroica {

struct DiagnosedRun {
  LocalizeInput input;   // every worker's pattern (kept for charts), stacks, input errors
  Diagnosis diagnosis;
};

inline StatusOr<DiagnosedRun> DiagnosePaths(const std::vector<std::string>& paths, const std::string& expect_path,
                                            int threads) {
  Expectations expectations = DefaultExpectations();
  if (!expect_path.empty()) {
    StatusOr<Expectations> loaded = LoadExpectations(expect_path);
    if (!loaded.ok()) return loaded.status();
    expectations = *loaded;
  }
  if (threads <= 0) threads = static_cast<int>(std::max(1u, std::thread::hardware_concurrency()));
  StatusOr<LocalizeInput> input = CollectDiagnoseInputs(paths, threads, /*keep_patterns=*/true);
  if (!input.ok()) return input.status();
  DiagnosedRun run;
  run.input = std::move(*input);
  run.diagnosis = Localize(run.input, expectations);
  return run;
}

}  // namespace eroica
