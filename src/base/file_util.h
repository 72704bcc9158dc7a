// Small file helpers shared by the readers and writers.
#pragma once

#include <string>

#include "base/status.h"

namespace eroica {

// Reads a whole (small) file; for traces use trace/byte_source.h, which streams.
StatusOr<std::string> ReadSmallFile(const std::string& path, size_t max_bytes = 64 << 20);

// Writes atomically: to PATH.tmp, then rename, so readers never see half a file.
Status WriteFileAtomically(const std::string& path, std::string_view contents);

}  // namespace eroica
