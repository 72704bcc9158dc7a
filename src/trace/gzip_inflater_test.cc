#include "trace/gzip_inflater.h"

#include <fmt/core.h>
#include <gtest/gtest.h>

#include <string>

#include "base/temp_dir.h"
#include "trace/zlib_gzip.h"

namespace eroica {
namespace {

// Text that compresses but not to nothing: several MB inflate over many calls and input refills.
std::string Lines(int count) {
  std::string text;
  for (int i = 0; i < count; ++i)
    text += fmt::format("{{\"name\": \"op{}\", \"ts\": {}, \"dur\": {}}},\n", i % 113, i * 7, i % 31);
  return text;
}

struct Inflated {
  std::string bytes;
  Status status;
};

// Everything the inflater gives for `gzip`, asking `capacity` bytes at a time.
Inflated InflateAll(const TempDir& dir, const std::string& gzip, size_t capacity) {
  std::string path = dir.Write("t.gz", gzip);
  GzipInflater inflater(std::fopen(path.c_str(), "rb"), path);
  Inflated out;
  std::string buffer(capacity, '\0');
  while (true) {
    size_t filled = 0;
    Status status = inflater.Inflate(buffer.data(), capacity, &filled);
    out.bytes.append(buffer.data(), filled);
    if (!status.ok()) {
      out.status = status;
      size_t again = 1;
      EXPECT_FALSE(inflater.Inflate(buffer.data(), capacity, &again).ok()) << "the error is sticky";
      EXPECT_EQ(again, 0u);
      return out;
    }
    if (filled == 0) return out;
  }
}

TEST(GzipInflaterTest, InflatesLargeInputInSmallAndLargePieces) {
  TempDir dir;
  std::string text = Lines(100000);  // 3.5 MB: several 256 KB input refills
  std::string gzip = ZlibGzip(text, 1);
  Inflated small = InflateAll(dir, ZlibGzip(text.substr(0, 5000)), 1);
  ASSERT_TRUE(small.status.ok()) << small.status.message();
  EXPECT_EQ(small.bytes, text.substr(0, 5000));
  for (size_t capacity : {size_t{4093}, size_t{1} << 20, size_t{8} << 20}) {
    Inflated out = InflateAll(dir, gzip, capacity);
    ASSERT_TRUE(out.status.ok()) << out.status.message();
    EXPECT_EQ(out.bytes.size(), text.size());
    EXPECT_TRUE(out.bytes == text) << "capacity " << capacity;
  }
}

TEST(GzipInflaterTest, ConcatenatedMembersAreOneStream) {
  TempDir dir;
  std::string a = Lines(30000), b = "", c = Lines(7);
  Inflated out = InflateAll(dir, ZlibGzip(a, 1) + ZlibGzip(b) + ZlibGzip(c, 9), 1 << 16);
  ASSERT_TRUE(out.status.ok()) << out.status.message();
  EXPECT_TRUE(out.bytes == a + b + c);
}

TEST(GzipInflaterTest, AnEmptyMemberInflatesToNothing) {
  TempDir dir;
  Inflated out = InflateAll(dir, ZlibGzip(""), 4096);
  EXPECT_TRUE(out.status.ok()) << out.status.message();
  EXPECT_TRUE(out.bytes.empty());
}

TEST(GzipInflaterTest, ACutStreamKeepsWhatInflatedAndSaysTruncated) {
  TempDir dir;
  std::string text = Lines(30000);
  std::string gzip = ZlibGzip(text);
  for (size_t keep : {size_t{0}, size_t{5}, gzip.size() / 2, gzip.size() - 4}) {
    Inflated out = InflateAll(dir, gzip.substr(0, keep), 1 << 20);
    ASSERT_FALSE(out.status.ok()) << "kept " << keep;
    EXPECT_NE(out.status.message().find("truncated"), std::string::npos) << out.status.message();
    EXPECT_EQ(text.compare(0, out.bytes.size(), out.bytes), 0) << "what came out is the start of the text";
    if (keep == gzip.size() / 2) {
      EXPECT_GT(out.bytes.size(), text.size() / 4);
    }
  }
}

TEST(GzipInflaterTest, DamageIsAnErrorSayingWhere) {
  TempDir dir;
  std::string text = Lines(50000);
  std::string gzip = ZlibGzip(text);
  std::string bad_crc = gzip;
  bad_crc[gzip.size() - 6] ^= 0x5a;
  Inflated crc = InflateAll(dir, bad_crc, 1 << 20);
  ASSERT_FALSE(crc.status.ok());
  EXPECT_NE(crc.status.message().find("corrupt gzip data near compressed byte"), std::string::npos);
  EXPECT_NE(crc.status.message().find("checksum"), std::string::npos) << crc.status.message();

  std::string bad_header = gzip;
  bad_header[2] = 7;  // a compression method that is not deflate
  Inflated header = InflateAll(dir, bad_header, 1 << 20);
  ASSERT_FALSE(header.status.ok());
  EXPECT_TRUE(header.bytes.empty());

  std::string garbage = gzip;
  for (size_t i = gzip.size() / 3; i < gzip.size() / 3 + 64; ++i) garbage[i] = static_cast<char>(i * 37);
  Inflated scrambled = InflateAll(dir, garbage, 1 << 20);
  ASSERT_FALSE(scrambled.status.ok());
  EXPECT_LT(scrambled.bytes.size(), text.size());
}

TEST(GzipInflaterTest, BytesAfterAMemberThatAreNotGzipAreDamage) {
  TempDir dir;
  std::string text = Lines(1000);
  Inflated out = InflateAll(dir, ZlibGzip(text) + "trailing junk", 1 << 20);
  ASSERT_FALSE(out.status.ok());
  EXPECT_TRUE(out.bytes == text) << "the member before the junk is whole";
}

}  // namespace
}  // namespace eroica
