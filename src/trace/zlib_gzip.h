// gzip as zlib writes it, one member: an encoder independent of the reader's ISA-L inflate, for
// the tests and the fuzzer that feed it (header-only, zlib is linked where it is used).
#pragma once

#include <zlib.h>

#include <string>
#include <string_view>

namespace eroica {

inline std::string ZlibGzip(std::string_view in, int level = 6) {
  z_stream z{};
  deflateInit2(&z, level, Z_DEFLATED, 15 + 16, 8, Z_DEFAULT_STRATEGY);
  std::string out(deflateBound(&z, in.size()) + 64, '\0');
  z.next_in = reinterpret_cast<Bytef*>(const_cast<char*>(in.data()));
  z.avail_in = static_cast<uInt>(in.size());
  z.next_out = reinterpret_cast<Bytef*>(out.data());
  z.avail_out = static_cast<uInt>(out.size());
  deflate(&z, Z_FINISH);
  out.resize(z.total_out);
  deflateEnd(&z);
  return out;
}

}  // namespace eroica
