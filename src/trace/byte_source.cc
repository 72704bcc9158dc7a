#include "trace/byte_source.h"

#include <zlib.h>

#include <cerrno>
#include <cstdio>
#include <cstring>
#include <vector>

namespace eroica {
namespace {

class FileSource : public ByteSource {
 public:
  FileSource(FILE* file, std::string path) : file_(file), path_(std::move(path)) {}
  ~FileSource() override { std::fclose(file_); }

  StatusOr<size_t> Read(char* buffer, size_t capacity) override {
    size_t n = std::fread(buffer, 1, capacity, file_);
    if (n == 0 && std::ferror(file_)) return ErrorStatus("{}: read error", path_);
    return n;
  }
  bool compressed() const override { return false; }

 protected:
  FILE* file_;
  std::string path_;
};

// gzip (possibly several concatenated members) through zlib's streaming inflate.
class GzipSource : public FileSource {
 public:
  GzipSource(FILE* file, std::string path) : FileSource(file, std::move(path)), input_(1 << 18) {
    std::memset(&stream_, 0, sizeof(stream_));
    inflateInit2(&stream_, 15 + 32);
  }
  ~GzipSource() override { inflateEnd(&stream_); }

  StatusOr<size_t> Read(char* buffer, size_t capacity) override {
    if (!pending_error_.ok()) return pending_error_;
    StatusOr<size_t> n = Inflate(buffer, capacity);
    if (!n.ok() && stream_.avail_out < capacity) {
      // Hand on what inflated before the damage; report it on the next call.
      pending_error_ = n.status();
      return capacity - stream_.avail_out;
    }
    return n;
  }
  bool compressed() const override { return true; }

 private:
  StatusOr<size_t> Inflate(char* buffer, size_t capacity) {
    stream_.next_out = reinterpret_cast<Bytef*>(buffer);
    stream_.avail_out = static_cast<uInt>(capacity);
    while (stream_.avail_out > 0 && !finished_) {
      if (stream_.avail_in == 0) {
        size_t n = std::fread(input_.data(), 1, input_.size(), file_);
        if (n == 0) {
          if (std::ferror(file_)) return ErrorStatus("{}: read error", path_);
          if (!member_done_) {
            return ErrorStatus("{}: gzip stream is truncated (cut after {} compressed bytes)",
                               path_, compressed_bytes_);
          }
          finished_ = true;
          break;
        }
        compressed_bytes_ += static_cast<int64_t>(n);
        stream_.next_in = reinterpret_cast<Bytef*>(input_.data());
        stream_.avail_in = static_cast<uInt>(n);
      }
      if (member_done_) {
        // Another gzip member follows (concatenated .gz files are valid gzip).
        inflateReset(&stream_);
        member_done_ = false;
      }
      int rc = inflate(&stream_, Z_NO_FLUSH);
      if (rc == Z_STREAM_END) {
        member_done_ = true;
      } else if (rc != Z_OK && rc != Z_BUF_ERROR) {
        return ErrorStatus("{}: corrupt gzip data near compressed byte {}: {}", path_,
                           compressed_bytes_ - stream_.avail_in,
                           stream_.msg ? stream_.msg : "inflate error");
      }
    }
    return capacity - stream_.avail_out;
  }

  z_stream stream_;
  Status pending_error_;
  std::vector<char> input_;
  int64_t compressed_bytes_ = 0;
  bool member_done_ = false;
  bool finished_ = false;
};

}  // namespace

StatusOr<std::unique_ptr<ByteSource>> OpenByteSource(const std::string& path) {
  FILE* file = std::fopen(path.c_str(), "rb");
  if (file == nullptr) return ErrorStatus("{}: cannot open: {}", path, std::strerror(errno));
  unsigned char magic[2] = {0, 0};
  size_t n = std::fread(magic, 1, 2, file);
  std::rewind(file);
  if (n == 2 && magic[0] == 0x1f && magic[1] == 0x8b) {
    return std::unique_ptr<ByteSource>(new GzipSource(file, path));
  }
  return std::unique_ptr<ByteSource>(new FileSource(file, path));
}

}  // namespace eroica
