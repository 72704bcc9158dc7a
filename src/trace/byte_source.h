// Streams a trace file's bytes, inflating gzip, so a multi-GB trace never has to fit in memory.
// The format is detected from the magic bytes, not the file name.
#pragma once

#include <cstddef>
#include <memory>
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
};

// gzip of any size streams through ISA-L (trace/gzip_inflater.h) in a few MB of memory: on a
// helper thread when `inflate_on_helper_thread` (inflating and parsing then overlap on two
// cores), else on the caller's thread, straight into its buffer.
StatusOr<std::unique_ptr<ByteSource>> OpenByteSource(const std::string& path, bool inflate_on_helper_thread = true);

}  // namespace eroica
