#include "base/zstd_inflate.h"

#include <zstd.h>

#include <algorithm>
#include <memory>

namespace eroica {
namespace {

struct DctxFree {
  void operator()(ZSTD_DCtx* d) const { ZSTD_freeDCtx(d); }
};

}  // namespace

StatusOr<std::string> InflateZstd(std::string_view compressed, uint64_t claimed_bytes) {
  std::unique_ptr<ZSTD_DCtx, DctxFree> dctx(ZSTD_createDCtx());
  if (!dctx) return ErrorStatus("out of memory for zstd");
  std::string out;
  size_t produced = 0;
  bool complete = false;  // the last frame that made progress ended
  ZSTD_inBuffer in{compressed.data(), compressed.size(), 0};
  while (true) {
    if (produced == out.size() && out.size() < claimed_bytes) {
      out.resize(static_cast<size_t>(std::min<uint64_t>(claimed_bytes, std::max<size_t>(out.size() * 2, 1 << 20))));
    }
    size_t room = out.size() - produced;
    char probe;  // when full: one byte more would mean the size was a lie
    ZSTD_outBuffer buffer = room > 0 ? ZSTD_outBuffer{out.data(), out.size(), produced} : ZSTD_outBuffer{&probe, 1, 0};
    size_t in_before = in.pos;
    size_t r = ZSTD_decompressStream(dctx.get(), &buffer, &in);
    if (ZSTD_isError(r)) return ErrorStatus("compressed data is damaged: {}", ZSTD_getErrorName(r));
    size_t made = room > 0 ? buffer.pos - produced : buffer.pos;
    if (room == 0 && made > 0) return ErrorStatus("compressed data is longer than the {} bytes claimed", claimed_bytes);
    if (made == 0 && in.pos == in_before) break;
    produced += room > 0 ? made : 0;
    complete = r == 0;
  }
  if (!complete || produced != claimed_bytes || in.pos != in.size) {
    return ErrorStatus("compressed data is damaged or cut short ({} of {} bytes)", produced, claimed_bytes);
  }
  out.resize(produced);
  return out;
}

}  // namespace eroica
