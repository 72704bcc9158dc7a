// libFuzzer target: the gzip path of the trace reader (ISA-L's streaming inflate). The first
// byte picks how the rest is fed: gzip-compressed here (so the JSON inside is what mutates) or
// as raw bytes (damaged or concatenated gzip members), and whether the inflate runs on the
// reader's thread or on a helper thread.
#include <cstdint>
#include <string>

#include "base/fuzz_scratch.h"
#include "summary/fuzz_input.h"
#include "trace/zlib_gzip.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  if (size == 0) return 0;
  uint8_t mode = data[0];
  std::string_view rest(reinterpret_cast<const char*>(data) + 1, size - 1);
  std::string bytes = (mode & 1) ? std::string(rest) : eroica::ZlibGzip(rest);
  std::string path = eroica::WriteFuzzScratch(bytes, "trace.json.gz");
  eroica::ReadOptions options;
  options.chunk_bytes = 512;
  options.inflate_on_helper_thread = (mode & 2) != 0;
  eroica::SummarizeFuzzFile(path, options);
  return 0;
}
