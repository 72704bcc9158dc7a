// Hang diagnosis from the stacks every rank's watchdog dumps (the Python package writes
// stacks-rank-<r>.json into the session folder): the minority stack is the suspect.
#pragma once

#include <string>
#include <vector>

#include "base/status.h"
#include "localize/finding.h"

namespace eroica {

struct StackFrame {
  std::string file;
  int line = 0;
  std::string function;
  std::string code;
};

struct StackDump {
  int rank = -1;
  int world_size = 0;
  int64_t iteration = -1;
  std::vector<StackFrame> main_frames;  // the main thread's stack, innermost last
  std::string waiting_in;               // the collective it waits in, when known
  std::string path;
};

StatusOr<StackDump> ReadStackDump(const std::string& path);

// Compares the ranks' stacks; returns the hang finding (empty when there are no dumps).
std::vector<Finding> FindHang(const std::vector<StackDump>& dumps, int world_size);

// The innermost frame in the user's code (not the standard library, torch or eroica).
const StackFrame* InnermostUserFrame(const StackDump& dump);

}  // namespace eroica
