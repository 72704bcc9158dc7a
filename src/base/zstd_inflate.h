// Inflating a zstd frame whose size a file claims. Memory grows only with the bytes that
// actually come out, so a forged size in a 30-byte file costs nothing.
#pragma once

#include <cstdint>
#include <string>
#include <string_view>

#include "base/status.h"

namespace eroica {

// Exactly claimed_bytes must come out of COMPRESSED (one or more frames), else an error.
StatusOr<std::string> InflateZstd(std::string_view compressed, uint64_t claimed_bytes);

}  // namespace eroica
