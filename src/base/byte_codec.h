// Little-endian binary encoding for our compact file formats (pattern files, the agent's
// metrics files and series buffers): LEB128 varints, zigzag signed varints, fixed-width
// integers and floats, length-prefixed strings. The reader never trusts a length it reads:
// every read is bounds-checked, and a failed read makes the reader fail for good (it then
// returns zeros); the Get* forms return false instead, for chains of reads.
#pragma once

#include <cstdint>
#include <cstring>
#include <string>
#include <string_view>

namespace eroica {

inline uint64_t ZigZagEncode(int64_t value) {
  return (static_cast<uint64_t>(value) << 1) ^ static_cast<uint64_t>(value >> 63);
}
inline int64_t ZigZagDecode(uint64_t value) {
  return static_cast<int64_t>(value >> 1) ^ -static_cast<int64_t>(value & 1);
}

// Writes into its own buffer, or appends to a caller's string.
class ByteWriter {
 public:
  ByteWriter() : out_(&own_) {}
  explicit ByteWriter(std::string* out) : out_(out) {}
  ByteWriter(const ByteWriter&) = delete;
  ByteWriter& operator=(const ByteWriter&) = delete;

  void Varint(uint64_t value) {
    while (value >= 0x80) {
      out_->push_back(static_cast<char>(value | 0x80));
      value >>= 7;
    }
    out_->push_back(static_cast<char>(value));
  }
  void SignedVarint(int64_t value) { Varint(ZigZagEncode(value)); }
  void U8(uint8_t value) { out_->push_back(static_cast<char>(value)); }
  void U32(uint32_t value) { Fixed(value, 4); }
  void U64(uint64_t value) { Fixed(value, 8); }
  void F32(float value) {
    uint32_t bits;
    std::memcpy(&bits, &value, 4);
    U32(bits);
  }
  void F64(double value) {
    uint64_t bits;
    std::memcpy(&bits, &value, 8);
    U64(bits);
  }
  void String(std::string_view text) {
    Varint(text.size());
    out_->append(text);
  }
  const std::string& bytes() const { return *out_; }
  std::string& bytes() { return *out_; }

 private:
  void Fixed(uint64_t value, int n) {
    for (int i = 0; i < n; ++i) out_->push_back(static_cast<char>(value >> (8 * i)));
  }
  std::string own_;
  std::string* out_;
};

class ByteReader {
 public:
  explicit ByteReader(std::string_view data) : data_(data) {}

  bool ok() const { return ok_; }
  bool at_end() const { return pos_ >= data_.size(); }
  size_t remaining() const { return pos_ < data_.size() ? data_.size() - pos_ : 0; }
  size_t position() const { return pos_; }

  uint64_t Varint() {
    uint64_t value = 0;
    for (int shift = 0; shift < 64; shift += 7) {
      if (pos_ >= data_.size()) return Fail();
      auto byte = static_cast<uint8_t>(data_[pos_++]);
      value |= static_cast<uint64_t>(byte & 0x7f) << shift;
      if ((byte & 0x80) == 0) return value;
    }
    return Fail();  // more than 10 bytes: not a varint we wrote
  }
  int64_t SignedVarint() { return ZigZagDecode(Varint()); }
  uint8_t U8() {
    if (pos_ >= data_.size()) return static_cast<uint8_t>(Fail());
    return static_cast<uint8_t>(data_[pos_++]);
  }
  uint32_t U32() { return static_cast<uint32_t>(Fixed(4)); }
  uint64_t U64() { return Fixed(8); }
  float F32() {
    uint32_t bits = U32();
    float value;
    std::memcpy(&value, &bits, 4);
    return value;
  }
  double F64() {
    uint64_t bits = U64();
    double value;
    std::memcpy(&value, &bits, 8);
    return value;
  }
  // A string of at most `max_bytes` (and never more than the bytes that remain).
  std::string_view String(size_t max_bytes = SIZE_MAX) {
    uint64_t n = Varint();
    if (!ok_ || n > remaining() || n > max_bytes) {
      Fail();
      return {};
    }
    std::string_view s = data_.substr(pos_, n);
    pos_ += n;
    return s;
  }

  // The same reads, false once the reader has failed.
  bool GetU8(uint8_t* value) { return Set(value, U8()); }
  bool GetFixed32(uint32_t* value) { return Set(value, U32()); }
  bool GetFixed64(uint64_t* value) { return Set(value, U64()); }
  bool GetVarint(uint64_t* value) { return Set(value, Varint()); }
  bool GetSigned(int64_t* value) { return Set(value, SignedVarint()); }
  bool GetString(std::string* value, size_t max_bytes = 1 << 20) {
    std::string_view s = String(max_bytes);
    if (ok_) value->assign(s);
    return ok_;
  }

 private:
  template <typename T, typename V>
  bool Set(T* out, V value) {
    if (ok_) *out = static_cast<T>(value);
    return ok_;
  }
  uint64_t Fixed(int n) {
    if (!ok_ || remaining() < static_cast<size_t>(n)) return Fail();
    uint64_t value = 0;
    for (int i = 0; i < n; ++i) value |= static_cast<uint64_t>(static_cast<uint8_t>(data_[pos_ + i])) << (8 * i);
    pos_ += n;
    return value;
  }
  uint64_t Fail() {
    ok_ = false;
    pos_ = data_.size();
    return 0;
  }

  std::string_view data_;
  size_t pos_ = 0;
  bool ok_ = true;
};

}  // namespace eroica
