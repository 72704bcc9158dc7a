#include "trace/gzip_inflater.h"

#include <cstring>

namespace eroica {
namespace {

constexpr size_t kInputBytes = size_t{1} << 18;

const char* IsalError(int rc) {
  switch (rc) {
    case ISAL_INVALID_BLOCK:
      return "invalid deflate block";
    case ISAL_INVALID_SYMBOL:
      return "invalid deflate symbol";
    case ISAL_INVALID_LOOKBACK:
      return "invalid lookback distance";
    case ISAL_INVALID_WRAPPER:
      return "not a gzip header";
    case ISAL_UNSUPPORTED_METHOD:
      return "unsupported compression method";
    case ISAL_INCORRECT_CHECKSUM:
      return "checksum mismatch";
    case ISAL_NEED_DICT:
      return "needs a preset dictionary";
    default:
      return "inflate error";
  }
}

}  // namespace

GzipInflater::GzipInflater(FILE* file, std::string path)
    : file_(file), path_(std::move(path)), state_(std::make_unique<inflate_state>()), input_(kInputBytes) {
  isal_inflate_init(state_.get());
  state_->crc_flag = ISAL_GZIP;  // parse the header, check the trailer's CRC and size
}

GzipInflater::~GzipInflater() { std::fclose(file_); }

Status GzipInflater::Inflate(char* buffer, size_t capacity, size_t* filled) {
  *filled = 0;
  if (!error_.ok()) return error_;
  Status status = InflateSome(buffer, capacity, filled);
  if (!status.ok()) error_ = status;
  return status;
}

bool GzipInflater::RefillInput(Status* status) {
  size_t n = std::fread(input_.data(), 1, input_.size(), file_);
  if (n == 0) {
    if (std::ferror(file_)) *status = ErrorStatus("{}: read error", path_);
    eof_ = true;
    return false;
  }
  compressed_bytes_ += static_cast<int64_t>(n);
  state_->next_in = input_.data();
  state_->avail_in = static_cast<uint32_t>(n);
  return true;
}

Status GzipInflater::InflateSome(char* buffer, size_t capacity, size_t* filled) {
  inflate_state& s = *state_;
  s.next_out = reinterpret_cast<uint8_t*>(buffer);
  // avail_out is 32 bits: a larger request is simply filled in part.
  s.avail_out = static_cast<uint32_t>(std::min<size_t>(capacity, uint32_t{1} << 30));
  uint32_t asked = s.avail_out;
  Status status;
  while (s.avail_out > 0 && !finished_) {
    if (s.block_state == ISAL_BLOCK_FINISH) {
      // A member ended (its CRC and size checked). Another may follow: concatenated .gz files
      // are valid gzip. Anything else after a member is damage, as zlib's reader calls it.
      if (s.avail_in == 0 && !eof_ && !RefillInput(&status) && !status.ok()) break;
      if (s.avail_in == 0) {
        finished_ = true;
        break;
      }
      isal_inflate_reset(&s);
      s.crc_flag = ISAL_GZIP;
    }
    if (s.avail_in == 0) {
      if (eof_ || !RefillInput(&status)) {
        if (!status.ok()) break;
        status = ErrorStatus("{}: gzip stream is truncated (cut after {} compressed bytes)", path_, compressed_bytes_);
        break;
      }
    }
    int rc = isal_inflate(&s);
    if (rc < 0 || rc == ISAL_NEED_DICT) {
      status = ErrorStatus("{}: corrupt gzip data near compressed byte {}: {}", path_,
                           compressed_bytes_ - static_cast<int64_t>(s.avail_in), IsalError(rc));
      break;
    }
  }
  *filled = asked - s.avail_out;
  return status;
}

}  // namespace eroica
