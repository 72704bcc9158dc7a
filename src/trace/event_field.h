// What each key of a trace event means to the readers: the one table both the fast walk (and
// its layouts) and the exact simdjson path go by, so the two cannot disagree on a field.
#pragma once

#include <cstdint>
#include <string_view>

namespace eroica {

// What a member's value is to the parser. The field follows from the key and its depth alone
// (for the fixed ones, from bytes of the value too, which are then part of what must match), so
// a layout learned on one event holds for every event that matches it.
enum class Field : uint8_t {
  kSkip,   // a value nobody reads
  kPhase,  // "ph": a non-"X" phase ends the event (its rest is skipped)
  kTs,
  kDur,
  kName,
  kCat,
  kPid,
  kTid,
  kArgs,         // "args": the members after it are the args' own, until the object closes
  kCorrelation,  // args.correlation
  kBytes,        // args.bytes
  kInMsgNelems,  // args["In msg nelems"]
  kInputDims,    // args["Input Dims"]
  kCollective,   // args["Collective name"]
  kDtype,        // args.dtype
  // The layouts' own (trace/layout_trie.h), never a key's:
  kEnd,  // no value: the node's bytes close the event
  // A phase or cat that was a short plain string: its bytes are part of the gap (a layout per
  // phase and per category), and the node holds what they read as.
  kFixedPhase,
  kFixedCat,
};

Field TopLevelField(std::string_view key);
Field ArgsField(std::string_view key);

// Bytes per element of a PyTorch dtype name ("Float", "BFloat16"), 0 when unknown.
int DtypeBytes(std::string_view dtype);

// A collective's message size: args["bytes"] when given, else its element count times the
// dtype's size when both are known, else -1.
inline int64_t ArgsBytes(int64_t bytes, int64_t in_nelems, int dtype_bytes) {
  if (bytes >= 0 || in_nelems < 0 || dtype_bytes <= 0) return bytes;
  return in_nelems * dtype_bytes;
}

}  // namespace eroica
