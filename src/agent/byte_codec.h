// Little-endian fixed-width and zigzag-varint encoding, shared by the in-memory series buffer
// and the metrics file. The reader never trusts a length: every read is bounds-checked and a
// failed read makes the reader fail for good.
#pragma once

#include <cstdint>
#include <string>
#include <string_view>

namespace eroica::agent {

inline uint64_t ZigZagEncode(int64_t value) {
  return (static_cast<uint64_t>(value) << 1) ^ static_cast<uint64_t>(value >> 63);
}
inline int64_t ZigZagDecode(uint64_t value) {
  return static_cast<int64_t>(value >> 1) ^ -static_cast<int64_t>(value & 1);
}

// Appends to a caller-owned string.
class ByteWriter {
 public:
  explicit ByteWriter(std::string* out) : out_(out) {}

  void PutU8(uint8_t value) { out_->push_back(static_cast<char>(value)); }
  void PutFixed32(uint32_t value);
  void PutFixed64(uint64_t value);
  void PutVarint(uint64_t value);
  void PutSigned(int64_t value) { PutVarint(ZigZagEncode(value)); }
  void PutString(std::string_view value);

 private:
  std::string* out_;
};

// Reads from a borrowed buffer. Each Get* returns false (and stays failed) past the end or
// on a malformed varint.
class ByteReader {
 public:
  explicit ByteReader(std::string_view data) : data_(data) {}

  bool GetU8(uint8_t* value);
  bool GetFixed32(uint32_t* value);
  bool GetFixed64(uint64_t* value);
  bool GetVarint(uint64_t* value);
  bool GetSigned(int64_t* value);
  bool GetString(std::string* value, size_t max_bytes = 1 << 20);

  bool ok() const { return ok_; }
  bool at_end() const { return pos_ == data_.size(); }
  size_t remaining() const { return data_.size() - pos_; }
  size_t position() const { return pos_; }

 private:
  bool Fail() {
    ok_ = false;
    return false;
  }

  std::string_view data_;
  size_t pos_ = 0;
  bool ok_ = true;
};

}  // namespace eroica::agent
