#include "agent/byte_codec.h"

namespace eroica::agent {

void ByteWriter::PutFixed32(uint32_t value) {
  for (int i = 0; i < 4; ++i) PutU8(static_cast<uint8_t>(value >> (8 * i)));
}

void ByteWriter::PutFixed64(uint64_t value) {
  for (int i = 0; i < 8; ++i) PutU8(static_cast<uint8_t>(value >> (8 * i)));
}

void ByteWriter::PutVarint(uint64_t value) {
  while (value >= 0x80) {
    PutU8(static_cast<uint8_t>(value | 0x80));
    value >>= 7;
  }
  PutU8(static_cast<uint8_t>(value));
}

void ByteWriter::PutString(std::string_view value) {
  PutVarint(value.size());
  out_->append(value.data(), value.size());
}

bool ByteReader::GetU8(uint8_t* value) {
  if (!ok_ || pos_ >= data_.size()) return Fail();
  *value = static_cast<uint8_t>(data_[pos_++]);
  return true;
}

bool ByteReader::GetFixed32(uint32_t* value) {
  if (!ok_ || remaining() < 4) return Fail();
  uint32_t result = 0;
  for (int i = 0; i < 4; ++i) {
    result |= static_cast<uint32_t>(static_cast<uint8_t>(data_[pos_ + i])) << (8 * i);
  }
  pos_ += 4;
  *value = result;
  return true;
}

bool ByteReader::GetFixed64(uint64_t* value) {
  if (!ok_ || remaining() < 8) return Fail();
  uint64_t result = 0;
  for (int i = 0; i < 8; ++i) {
    result |= static_cast<uint64_t>(static_cast<uint8_t>(data_[pos_ + i])) << (8 * i);
  }
  pos_ += 8;
  *value = result;
  return true;
}

bool ByteReader::GetVarint(uint64_t* value) {
  if (!ok_) return false;
  uint64_t result = 0;
  for (int shift = 0; shift < 64; shift += 7) {
    if (pos_ >= data_.size()) return Fail();
    uint8_t byte = static_cast<uint8_t>(data_[pos_++]);
    result |= static_cast<uint64_t>(byte & 0x7f) << shift;
    if ((byte & 0x80) == 0) {
      *value = result;
      return true;
    }
  }
  return Fail();  // more than 10 bytes: not a varint we wrote
}

bool ByteReader::GetSigned(int64_t* value) {
  uint64_t raw = 0;
  if (!GetVarint(&raw)) return false;
  *value = ZigZagDecode(raw);
  return true;
}

bool ByteReader::GetString(std::string* value, size_t max_bytes) {
  uint64_t size = 0;
  if (!GetVarint(&size)) return false;
  if (size > remaining() || size > max_bytes) return Fail();
  value->assign(data_.data() + pos_, size);
  pos_ += size;
  return true;
}

}  // namespace eroica::agent
