// What localization produces: findings ordered by impact, plus data-quality warnings. This is
// the "eroica.diagnosis/v1" document of DESIGN.md ("Interfaces").
#pragma once

#include <string>
#include <vector>

#include "localize/finding_kind.h"

namespace eroica {

struct Finding {
  FindingScope scope = FindingScope::kLocal;
  FindingCategory category = FindingCategory::kHost;
  std::vector<int> workers;          // the ranks to look at (local: the culprits; global: all affected)
  std::string function;              // the culprit's own excess function
  double impact_s_per_iter = 0;      // seconds lost per iteration: β excess × iteration time
  double beta = 0;                   // the function's β on the culprit (median over workers if global)
  double peer_beta = 0;              // the peers' median β for it (global: the expected upper bound)
  double expectation_distance = 0;   // D(f,w)
  double differential_distance = 0;  // Δ(f,w): robust z-score against the peers
  std::string evidence;              // one or two sentences with the numbers
  std::string location;              // file:line when known (Python frames, hang stacks)
  std::string action;                // what to do next, one sentence
  // With a baseline (`diagnose --baseline`, diff/): made by comparing with the job's baseline,
  // not from this window alone; and, for this window's findings, whether the baseline had the
  // same cost (diff/standing_costs.h): the job already paid it, it is not what changed.
  bool from_baseline = false;
  bool standing = false;
  // A rank's own processes (its loader workers, its other threads) that took cores every rank
  // runs on, busy and shared (cpu_contention.h): that share of the node's cores, seconds of each
  // rank's step. Every rank's ops then run slower (diff/baseline_findings.h
  // FoldSlowerOpsIntoTakenCores). 0 otherwise; not written to the diagnosis document.
  double cores_taken_s_per_iter = 0;
};

struct Diagnosis {
  int workers = 0;                // workers diagnosed
  int world_size = 0;             // as the traces declare it (0 when unknown)
  std::vector<Finding> findings;  // most impactful first
  std::vector<std::string> warnings;
  std::vector<std::string> notes;  // context that is not a problem (e.g. groups compared)
  // The nodes' CPUs explained a group's collective waits (cpu_contention.h CpuExplainsCommunication:
  // the ranks waited for descheduled peers), so a collective that grew since the baseline on every
  // rank is that too, not the network (diff/baseline_findings.h).
  bool collectives_waited_for_cpu = false;
  // What outside the job made it slower since its baseline, where that was found (a node other
  // processes came to share: diff/neighbour_growth.h), as the end of a verdict; "" otherwise.
  // A healthy job so slowed still says why it got slow.
  std::string slowed_by;

  bool healthy() const { return findings.empty(); }
};

}  // namespace eroica
