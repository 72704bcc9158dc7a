// Shared by every command that presents a diagnosis (diagnose, report, prompt, annotate): gather the
// inputs exactly as `diagnose` does, then localize. Header-only so each *_command.cc stays
// self-contained.
#pragma once

#include <algorithm>
#include <string>
#include <thread>
#include <vector>

#include "base/status.h"
#include "cli/diagnose_inputs.h"
#include "diff/baseline_findings.h"
#include "diff/busy_loader_workers.h"
#include "diff/grown_wait.h"
#include "diff/new_code_lines.h"
#include "diff/own_compute_growth.h"
#include "diff/own_loader_growth.h"
#include "diff/standing_costs.h"
#include "localize/finding_location.h"
#include "localize/localizer.h"
#include "localize/worker_table.h"

namespace eroica {

struct DiagnosedRun {
  LocalizeInput input;  // every worker's pattern (kept for charts), stacks, input errors
  Diagnosis diagnosis;
  Expectations expectations;  // what it was localized with (the baseline's rules localize again)
};

// The expected boxes from `expect_path`, or the built-in defaults when it is empty.
inline StatusOr<Expectations> ExpectationsFrom(const std::string& expect_path) {
  if (expect_path.empty()) return DefaultExpectations();
  return LoadExpectations(expect_path);
}

// `requested` trace readers, or one per core when it is not positive.
inline int ReaderThreads(int requested) {
  return requested > 0 ? requested : static_cast<int>(std::max(1u, std::thread::hardware_concurrency()));
}

// `keep_patterns`: keep every worker's pattern in the input (reports chart them).
inline StatusOr<DiagnosedRun> DiagnosePaths(const std::vector<std::string>& paths, const Expectations& expectations,
                                            int threads, bool keep_patterns) {
  StatusOr<LocalizeInput> input = CollectDiagnoseInputs(paths, ReaderThreads(threads), keep_patterns);
  if (!input.ok()) return input.status();
  DiagnosedRun run;
  run.input = std::move(*input);
  run.diagnosis = Localize(run.input, expectations);
  run.expectations = expectations;
  return run;
}

inline StatusOr<DiagnosedRun> DiagnosePaths(const std::vector<std::string>& paths, const std::string& expect_path,
                                            int threads) {
  StatusOr<Expectations> expectations = ExpectationsFrom(expect_path);
  if (!expectations.ok()) return expectations.status();
  return DiagnosePaths(paths, *expectations, threads, /*keep_patterns=*/true);
}

// Compares the run with the job's baseline (a session, trace folder or pattern bundle) and adds
// what that finds to its diagnosis (diff/baseline_findings.h). Needs the run's full patterns.
// Returns the diff it applied (reports show it).
// `detected_slowdown_ms`: the detector's measure of the slowdown, where it started the session
// (BaselineOptions::detected_slowdown_ms; DetectedSlowdownMs).
inline StatusOr<PatternDiff> ApplyBaselineFrom(const std::string& baseline_path, int threads, DiagnosedRun* run,
                                               double detected_slowdown_ms = 0) {
  StatusOr<LocalizeInput> base = CollectDiagnoseInputs({baseline_path}, ReaderThreads(threads), /*keep_patterns=*/true);
  if (!base.ok()) return ErrorStatus("baseline {}: {}", baseline_path, base.status().message());
  PatternDiff diff = DiffPatterns(base->workers, run->input.workers);
  // What this window's findings say the baseline had too stands for no slowdown (first, so that
  // the rules below look past it).
  MarkStandingCosts(base->workers, run->input.workers, diff, &run->diagnosis);
  BaselineOptions options;
  options.detected_slowdown_ms = detected_slowdown_ms;
  options.neighbour = FindNeighbourGrowth(base->workers, run->input.workers);
  if (ALocalFindingExplains(run->diagnosis, diff.now.iteration_ms - diff.base.iteration_ms, options.explains_share)) {
    options.neighbour.reset();
  }
  ApplyBaseline(diff, &run->diagnosis, options);
  FoldSlowerOpsIntoTakenCores(run->input.workers, &run->diagnosis);
  // A finding the baseline added has no code location yet: the window's stack samples give it
  // (the table is built again only then; localization's own is gone).
  auto locate_baselines_findings = [&] {
    bool unlocated = std::any_of(run->diagnosis.findings.begin(), run->diagnosis.findings.end(),
                                 [](const Finding& f) { return f.location.empty() && f.from_baseline; });
    if (!unlocated) return;
    LocateFindings(WorkerTableOf(run->input.workers), &run->diagnosis.findings);
  };
  locate_baselines_findings();
  // What the window's own samples do not place (compute grown everywhere) may be code the
  // baseline never ran.
  LocateByNewCodeLines(base->workers, run->input.workers, &run->diagnosis.findings);
  FindNewCodeOnEveryRank(base->workers, run->input.workers, diff, &run->diagnosis, options);
  FindLoaderWorkersTakingCores(base->workers, run->input.workers, diff, &run->diagnosis, options);
  FindOwnLoaderWorkersTakingCores(base->workers, run->input.workers, diff, &run->diagnosis, options);
  // One rank's loader last: every rank's cause, where one stands, makes its wait a turn.
  FindOwnLoaderGrowth(run->input.workers, diff, &run->diagnosis, options);
  // So are one rank's ops, where its thread ran on a CPU longer than its peers' (its own work).
  FindOwnComputeGrowth(run->input.workers, diff, &run->diagnosis, options);
  // Else the rank the others wait for more than in the job's past: the localizer's reading of it.
  FindGrownWaitForOneRank(base->workers, run->input.workers, diff, run->expectations, &run->diagnosis, options);
  locate_baselines_findings();
  PutStandingCostsLast(&run->diagnosis);
  return diff;
}

}  // namespace eroica
