// Little-endian binary encoding helpers for our compact file formats: LEB128 varints,
// zigzag signed varints, fixed-width floats and length-prefixed strings. The reader never
// trusts a length it reads: every read is bounds-checked and fails softly.
#pragma once

#include <cstdint>
#include <cstring>
#include <string>
#include <string_view>

namespace eroica {

class ByteWriter {
 public:
  void Varint(uint64_t value) {
    while (value >= 0x80) {
      out_.push_back(static_cast<char>(value | 0x80));
      value >>= 7;
    }
    out_.push_back(static_cast<char>(value));
  }
  void SignedVarint(int64_t value) {
    Varint((static_cast<uint64_t>(value) << 1) ^ static_cast<uint64_t>(value >> 63));
  }
  void U8(uint8_t value) { out_.push_back(static_cast<char>(value)); }
  void U32(uint32_t value) { Raw(&value, 4); }
  void F32(float value) { Raw(&value, 4); }
  void F64(double value) { Raw(&value, 8); }
  void String(std::string_view text) {
    Varint(text.size());
    out_.append(text);
  }
  const std::string& bytes() const { return out_; }
  std::string& bytes() { return out_; }

 private:
  void Raw(const void* data, size_t n) { out_.append(static_cast<const char*>(data), n); }
  std::string out_;
};

class ByteReader {
 public:
  explicit ByteReader(std::string_view data) : data_(data) {}

  bool ok() const { return ok_; }
  bool at_end() const { return pos_ >= data_.size(); }
  size_t remaining() const { return pos_ < data_.size() ? data_.size() - pos_ : 0; }

  uint64_t Varint() {
    uint64_t value = 0;
    for (int shift = 0; shift < 64; shift += 7) {
      if (pos_ >= data_.size()) return Fail();
      auto byte = static_cast<uint8_t>(data_[pos_++]);
      value |= static_cast<uint64_t>(byte & 0x7f) << shift;
      if ((byte & 0x80) == 0) return value;
    }
    return Fail();
  }
  int64_t SignedVarint() {
    uint64_t v = Varint();
    return static_cast<int64_t>((v >> 1) ^ (~(v & 1) + 1));
  }
  uint8_t U8() {
    if (pos_ >= data_.size()) return static_cast<uint8_t>(Fail());
    return static_cast<uint8_t>(data_[pos_++]);
  }
  uint32_t U32() { return Fixed<uint32_t>(); }
  float F32() { return Fixed<float>(); }
  double F64() { return Fixed<double>(); }
  std::string_view String() {
    uint64_t n = Varint();
    if (!ok_ || n > data_.size() - pos_) {
      Fail();
      return {};
    }
    std::string_view s = data_.substr(pos_, n);
    pos_ += n;
    return s;
  }

 private:
  template <typename T>
  T Fixed() {
    T value{};
    if (data_.size() - pos_ < sizeof(T) || pos_ > data_.size()) {
      Fail();
      return value;
    }
    std::memcpy(&value, data_.data() + pos_, sizeof(T));
    pos_ += sizeof(T);
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
