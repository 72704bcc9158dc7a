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
  // gzip inflated whole (libdeflate) up to this inflated size; streamed (zlib) above it.
  size_t max_whole_inflate_bytes = size_t{256} << 20;
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
