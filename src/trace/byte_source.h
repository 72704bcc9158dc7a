// Streams a trace file's bytes, inflating gzip, so a multi-GB trace never has to fit in memory.
// The format is detected from the magic bytes, not the file name.
#pragma once

#include <cstddef>
#include <memory>
#include <span>
#include <string>

#include "base/status.h"

namespace eroica {

class ByteSource {
 public:
  virtual ~ByteSource() = default;
  // Fills up to `capacity` bytes; returns 0 only at the end of the data. A damaged or cut
  // compressed stream is an error whose message says where.
  virtual StatusOr<size_t> Read(char* buffer, size_t capacity) = 0;
  virtual bool compressed() const = 0;
  // The bytes Read will deliver in all, when known in advance (else -1).
  virtual int64_t size_hint() const { return -1; }
  // Sources that hold all their bytes in memory lend them instead (empty: they do not): at
  // least kWholePadding writable bytes follow the view, and Read then delivers nothing more.
  virtual std::span<char> Whole() { return {}; }
};

inline constexpr size_t kWholePadding = 256;

// A gzip file of one member whose inflated size is at most `max_whole_inflate_bytes` is
// inflated at once by libdeflate (fastest per core; memory: that size). Larger or unusual gzip
// streams through zlib on a helper thread (a few MB whatever the size).
inline constexpr size_t kDefaultMaxWholeInflateBytes = size_t{256} << 20;
StatusOr<std::unique_ptr<ByteSource>> OpenByteSource(const std::string& path,
                                                     size_t max_whole_inflate_bytes = kDefaultMaxWholeInflateBytes);

}  // namespace eroica
