#include "trace/byte_source.h"

#include <libdeflate.h>
#include <sys/stat.h>
#include <zlib.h>

#include <algorithm>
#include <cerrno>
#include <condition_variable>
#include <cstdio>
#include <cstring>
#include <deque>
#include <mutex>
#include <new>
#include <thread>
#include <vector>

#include "base/file_util.h"
#include "base/huge_page_allocator.h"

namespace eroica {
namespace {

// Far above any trace; a sparse file claiming more is refused before anything is read.
constexpr uint64_t kMaxTraceFileBytes = uint64_t{1} << 42;

class FileSource : public ByteSource {
 public:
  FileSource(FILE* file, std::string path) : file_(file), path_(std::move(path)) {
    struct stat info {};
    if (fstat(fileno(file_), &info) == 0) size_ = static_cast<int64_t>(info.st_size);
  }
  ~FileSource() override { std::fclose(file_); }
  int64_t size_hint() const override { return size_; }

  StatusOr<size_t> Read(char* buffer, size_t capacity) override {
    size_t n = std::fread(buffer, 1, capacity, file_);
    if (n == 0 && std::ferror(file_)) return ErrorStatus("{}: read error", path_);
    return n;
  }
  bool compressed() const override { return false; }

 private:
  FILE* file_;
  std::string path_;
  int64_t size_ = -1;
};

// Memory for a whole inflated file, with transparent huge pages (faulting the output in 4 KB
// at a time costs as much as inflating it on a VM). No memory: data() is null, and the caller
// streams instead.
class BigBuffer {
 public:
  explicit BigBuffer(size_t size) : size_(size) {
    try {
      data_ = HugePageAllocator<char>().allocate(size);
    } catch (const std::bad_alloc&) {
      data_ = nullptr;
    }
  }
  ~BigBuffer() {
    if (data_ != nullptr) HugePageAllocator<char>().deallocate(data_, size_);
  }
  BigBuffer(const BigBuffer&) = delete;
  BigBuffer& operator=(const BigBuffer&) = delete;
  char* data() const { return data_; }

 private:
  char* data_ = nullptr;
  size_t size_;
};

// A gzip file inflated whole by libdeflate (about twice zlib's speed), lent to the reader in
// place: no copy.
class InflatedSource : public ByteSource {
 public:
  InflatedSource(std::unique_ptr<BigBuffer> data, size_t size) : data_(std::move(data)), size_(size) {}

  StatusOr<size_t> Read(char* buffer, size_t capacity) override {
    size_t n = std::min(capacity, size_ - pos_);
    std::memcpy(buffer, data_->data() + pos_, n);
    pos_ += n;
    return n;
  }
  bool compressed() const override { return true; }
  int64_t size_hint() const override { return static_cast<int64_t>(size_); }
  std::span<char> Whole() override {
    pos_ = size_;
    return std::span<char>(data_->data(), size_);
  }

 private:
  std::unique_ptr<BigBuffer> data_;
  size_t size_;
  size_t pos_ = 0;
};

// zlib's streaming inflate of a gzip file (possibly several concatenated members).
class ZlibInflater {
 public:
  ZlibInflater(FILE* file, std::string path) : file_(file), path_(std::move(path)), input_(1 << 18) {
    std::memset(&stream_, 0, sizeof(stream_));
    inflateInit2(&stream_, 15 + 32);
  }
  ~ZlibInflater() {
    inflateEnd(&stream_);
    std::fclose(file_);
  }

  // Fills up to `capacity` bytes; *filled says how many were inflated even when the status is
  // an error (the bytes before damage are good). 0 bytes and OK: the end.
  Status Inflate(char* buffer, size_t capacity, size_t* filled) {
    stream_.next_out = reinterpret_cast<Bytef*>(buffer);
    stream_.avail_out = static_cast<uInt>(capacity);
    Status status = InflateSome();
    *filled = capacity - stream_.avail_out;
    return status;
  }

 private:
  Status InflateSome() {
    while (stream_.avail_out > 0 && !finished_) {
      if (stream_.avail_in == 0) {
        size_t n = std::fread(input_.data(), 1, input_.size(), file_);
        if (n == 0) {
          if (std::ferror(file_)) return ErrorStatus("{}: read error", path_);
          if (!member_done_) {
            return ErrorStatus("{}: gzip stream is truncated (cut after {} compressed bytes)", path_,
                               compressed_bytes_);
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
                           compressed_bytes_ - stream_.avail_in, stream_.msg ? stream_.msg : "inflate error");
      }
    }
    return Status::Ok();
  }

  FILE* file_;
  std::string path_;
  z_stream stream_;
  std::vector<char> input_;
  int64_t compressed_bytes_ = 0;
  bool member_done_ = false;
  bool finished_ = false;
};

// Streaming inflate on a helper thread, so that inflating and parsing overlap on two cores and
// memory stays at a few buffers whatever the file size. The bytes inflated before damage are
// handed out first; the error comes with the next call.
class ThreadedGzipSource : public ByteSource {
 public:
  ThreadedGzipSource(FILE* file, std::string path) : inflater_(file, std::move(path)) {
    for (int i = 0; i < kSlots; ++i) free_.push_back(std::make_unique<char[]>(kSlotBytes));
    worker_ = std::thread([this] { Produce(); });
  }
  ~ThreadedGzipSource() override {
    {
      std::lock_guard<std::mutex> lock(mutex_);
      stop_ = true;
    }
    changed_.notify_all();
    worker_.join();
  }

  StatusOr<size_t> Read(char* buffer, size_t capacity) override {
    size_t copied = 0;
    while (copied < capacity) {
      if (current_pos_ == current_.size) {
        std::unique_lock<std::mutex> lock(mutex_);
        if (current_.data) free_.push_back(std::move(current_.data));
        current_ = {};
        current_pos_ = 0;
        changed_.notify_all();
        changed_.wait(lock, [this] { return !ready_.empty() || done_; });
        if (ready_.empty()) {
          if (copied > 0) return copied;
          if (!error_.ok()) return std::exchange(error_, Status::Ok());
          return size_t{0};
        }
        current_ = std::move(ready_.front());
        ready_.pop_front();
      }
      size_t n = std::min(capacity - copied, current_.size - current_pos_);
      std::memcpy(buffer + copied, current_.data.get() + current_pos_, n);
      copied += n;
      current_pos_ += n;
    }
    return copied;
  }
  bool compressed() const override { return true; }

 private:
  static constexpr int kSlots = 4;
  static constexpr size_t kSlotBytes = 1 << 20;

  struct Slot {
    std::unique_ptr<char[]> data;
    size_t size = 0;
  };

  void Produce() {
    while (true) {
      std::unique_ptr<char[]> buffer;
      {
        std::unique_lock<std::mutex> lock(mutex_);
        changed_.wait(lock, [this] { return !free_.empty() || stop_; });
        if (stop_) return;
        buffer = std::move(free_.back());
        free_.pop_back();
      }
      size_t filled = 0;
      Status status = inflater_.Inflate(buffer.get(), kSlotBytes, &filled);
      std::lock_guard<std::mutex> lock(mutex_);
      if (filled > 0) ready_.push_back({std::move(buffer), filled});
      if (!status.ok() || filled == 0) {
        error_ = status;
        done_ = true;
      }
      changed_.notify_all();
      if (done_) return;
    }
  }

  ZlibInflater inflater_;  // used by the worker only
  std::thread worker_;
  std::mutex mutex_;
  std::condition_variable changed_;
  std::deque<Slot> ready_;
  std::vector<std::unique_ptr<char[]>> free_;
  Status error_;
  bool done_ = false;
  bool stop_ = false;
  Slot current_;  // the consumer's
  size_t current_pos_ = 0;
};

// The whole file inflated by libdeflate when it is one gzip member of at most `max_bytes`
// inflated; nullptr otherwise (several members, a size over the budget, damage, a trailer that
// lies because the file is over 4 GiB): the streaming path then decides.
std::unique_ptr<ByteSource> InflateWhole(FILE* file, size_t max_bytes) {
  struct stat info {};
  if (fstat(fileno(file), &info) != 0 || info.st_size < 18) return nullptr;
  auto compressed_size = static_cast<size_t>(info.st_size);
  if (compressed_size > max_bytes) return nullptr;
  std::vector<char> compressed(compressed_size);
  bool read = std::fread(compressed.data(), 1, compressed_size, file) == compressed_size;
  std::rewind(file);
  if (!read) return nullptr;
  uint32_t trailer_size = 0;  // ISIZE: the inflated size mod 2^32
  std::memcpy(&trailer_size, compressed.data() + compressed_size - 4, 4);
  if (trailer_size > max_bytes) return nullptr;
  auto data = std::make_unique<BigBuffer>(size_t{trailer_size} + kWholePadding);
  if (data->data() == nullptr) return nullptr;
  libdeflate_decompressor* decompressor = libdeflate_alloc_decompressor();
  if (decompressor == nullptr) return nullptr;
  size_t in_bytes = 0, out_bytes = 0;
  libdeflate_result result = libdeflate_gzip_decompress_ex(decompressor, compressed.data(), compressed_size,
                                                           data->data(), trailer_size, &in_bytes, &out_bytes);
  libdeflate_free_decompressor(decompressor);
  if (result != LIBDEFLATE_SUCCESS || in_bytes != compressed_size || out_bytes != trailer_size) {
    return nullptr;
  }
  return std::make_unique<InflatedSource>(std::move(data), out_bytes);
}

}  // namespace

StatusOr<std::unique_ptr<ByteSource>> OpenByteSource(const std::string& path, size_t max_whole_inflate_bytes) {
  StatusOr<FILE*> opened = OpenStreamForReading(path, kMaxTraceFileBytes, nullptr);
  if (!opened.ok()) return opened.status();
  FILE* file = *opened;
  unsigned char magic[2] = {0, 0};
  size_t n = std::fread(magic, 1, 2, file);
  std::rewind(file);
  if (n == 2 && magic[0] == 0x1f && magic[1] == 0x8b) {
    if (std::unique_ptr<ByteSource> whole = InflateWhole(file, max_whole_inflate_bytes)) {
      std::fclose(file);
      return whole;
    }
    return std::unique_ptr<ByteSource>(new ThreadedGzipSource(file, path));
  }
  return std::unique_ptr<ByteSource>(new FileSource(file, path));
}

}  // namespace eroica
