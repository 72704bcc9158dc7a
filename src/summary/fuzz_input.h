// One fuzz input through the whole reading path: bytes → trace file → Trace → pattern. Used by
// the randomized-mutation test (in the normal suite) and by the libFuzzer target.
#pragma once

#include <string>
#include <string_view>

#include "trace/reader.h"

namespace eroica {

// Must never crash, hang or leak, whatever the bytes; returns true when a pattern came out.
bool SummarizeFuzzInput(std::string_view bytes, const std::string& scratch_path);
// The same for a file already written (the gzip fuzz target writes compressed bytes).
bool SummarizeFuzzFile(const std::string& path, const ReadOptions& options);

}  // namespace eroica
