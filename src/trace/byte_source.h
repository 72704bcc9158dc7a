// Streams a trace file's bytes, inflating gzip on the fly, so a multi-GB trace never has to fit
// in memory. The format is detected from the magic bytes, not the file name.
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

StatusOr<std::unique_ptr<ByteSource>> OpenByteSource(const std::string& path);

}  // namespace eroica
