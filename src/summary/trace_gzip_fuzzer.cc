// libFuzzer target: the gzip path of the trace reader (ISA-L's streaming inflate). The first
// byte picks how the rest is fed: gzip-compressed here (so the JSON inside is what mutates) or
// as raw bytes (damaged or concatenated gzip members), and whether the inflate runs on the
// reader's thread or on a helper thread.
#include <zlib.h>

#include <cstdint>
#include <string>

#include "base/fuzz_scratch.h"
#include "summary/fuzz_input.h"

namespace {

std::string Gzip(std::string_view in) {
  z_stream z{};
  deflateInit2(&z, 1, Z_DEFLATED, 15 + 16, 8, Z_DEFAULT_STRATEGY);
  std::string out(deflateBound(&z, in.size()) + 32, '\0');
  z.next_in = reinterpret_cast<Bytef*>(const_cast<char*>(in.data()));
  z.avail_in = static_cast<uInt>(in.size());
  z.next_out = reinterpret_cast<Bytef*>(out.data());
  z.avail_out = static_cast<uInt>(out.size());
  deflate(&z, Z_FINISH);
  out.resize(z.total_out);
  deflateEnd(&z);
  return out;
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  if (size == 0) return 0;
  uint8_t mode = data[0];
  std::string_view rest(reinterpret_cast<const char*>(data) + 1, size - 1);
  std::string bytes = (mode & 1) ? std::string(rest) : Gzip(rest);
  std::string path = eroica::WriteFuzzScratch(bytes, "trace.json.gz");
  eroica::ReadOptions options;
  options.chunk_bytes = 512;
  options.inflate_on_helper_thread = (mode & 2) != 0;
  eroica::SummarizeFuzzFile(path, options);
  return 0;
}
