// Streaming inflate of a gzip file by ISA-L's igzip: the fastest streaming inflate Debian ships
// (make bench measures it beside zlib and libdeflate), so every gzip, whatever its size, is read
// in a few MB of memory.
#pragma once

#include <isa-l/igzip_lib.h>

#include <cstdint>
#include <cstdio>
#include <memory>
#include <string>
#include <vector>

#include "base/status.h"

namespace eroica {

class GzipInflater {
 public:
  // Takes `file` (positioned at the first gzip member) and closes it.
  GzipInflater(FILE* file, std::string path);
  ~GzipInflater();
  GzipInflater(const GzipInflater&) = delete;
  GzipInflater& operator=(const GzipInflater&) = delete;

  // Fills up to `capacity` bytes; *filled says how many were inflated even when the status is an
  // error (the bytes before damage are good). 0 bytes and OK: the end. Concatenated members are
  // one stream, as gzip itself reads them.
  Status Inflate(char* buffer, size_t capacity, size_t* filled);

 private:
  Status InflateSome(char* buffer, size_t capacity, size_t* filled);
  bool RefillInput(Status* status);

  FILE* file_;
  std::string path_;
  std::unique_ptr<inflate_state> state_;  // 40 KB: not on the caller's stack
  std::vector<uint8_t> input_;
  int64_t compressed_bytes_ = 0;  // read from the file so far
  bool eof_ = false;
  bool finished_ = false;
  Status error_;  // sticky: once damaged, every later call reports it
};

}  // namespace eroica
