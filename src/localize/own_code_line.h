// Whose code is a straggler's extra work? A rank that runs code its peers never run (an evaluation
// pass, a metric or a log written on one rank) calls more ops, often the very ops training calls,
// so neither its calls' counts nor their sizes tell that code from more data. Its stack samples do:
// such code sits under a line of the job's own code that the rank's samples hold for much of its
// window and its peers' never reach, while more data or a slower processor stretches the lines
// every rank runs.
#pragma once

#include <cstdint>
#include <optional>

#include "base/interner.h"
#include "localize/groups.h"

namespace eroica {

struct OwnCodeLine {
  StringId location = Interner::kEmpty;  // "path/file.py:57(function)"
  double share = 0;                      // of the suspect's sampled window
  uint32_t depth = 0;                    // the job's frames outside it (CodeFrame::depth)
  size_t peers_without = 0;              // peers whose samples never reached the line
  size_t peers_sampled = 0;              // peers with stack samples at all
};

// The line of member `suspect`'s training thread that holds at least half of its own-work
// `excess` (shares of an iteration) and that a majority of its sampled peers never ran (not on
// their lists of lines, which were not full: WorkerPattern::code_lines); of several, the deepest,
// nearest the work. None without samples on the suspect and on at least one peer.
std::optional<OwnCodeLine> LineOnlyItRuns(const WorkerGroup& group, size_t suspect, double excess);

}  // namespace eroica
