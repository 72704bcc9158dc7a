// The trace module's facade: read one worker's PyTorch profiler trace (.json or .json.gz,
// Kineto object or bare event list) into a Trace.
#pragma once

#include <string>

#include "base/status.h"
#include "trace/trace.h"

namespace eroica {

// Errors only when nothing usable can be read (missing file, not a trace, cut before any
// event). Partial damage is recorded in trace.stats and the rest is returned.
struct ReadOptions {
  size_t chunk_bytes = 4 << 20;  // the most bytes of refused events parsed at a time
  // gzip is inflated on a helper thread (a second core), else on the reader's own thread: off
  // when every core already runs a reader of its own.
  bool inflate_on_helper_thread = true;
  // The most memory the kept events may take (0: no limit). A trace that needs more is an error
  // that says so, not a partial trace: a pattern of the first part would look like the whole.
  size_t max_event_bytes = 0;
  // Events read along the layouts learned from earlier ones (trace/layout_trie.h); off, every
  // event takes the full walk. The two must read the same; tests compare them.
  bool learn_layouts = true;
};
StatusOr<Trace> ReadTrace(const std::string& path, const ReadOptions& options = {});

// The rank a file name implies: the integer after "rank"/"worker" when present
// ("rank-3.json.gz", "worker3.pt.trace.json"), else the last integer; -1 if none.
int RankFromFileName(const std::string& path);

// One line for humans about what was skipped, or "" when the trace was clean.
std::string DescribeReadProblems(const Trace& trace);

}  // namespace eroica
