#include "trace/byte_source.h"

#include <algorithm>
#include <cerrno>
#include <condition_variable>
#include <cstdio>
#include <cstring>
#include <deque>
#include <mutex>
#include <thread>
#include <vector>

#include "base/file_util.h"
#include "trace/gzip_inflater.h"

namespace eroica {
namespace {

// Far above any trace; a sparse file claiming more is refused before anything is read.
constexpr uint64_t kMaxTraceFileBytes = uint64_t{1} << 42;

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

 private:
  FILE* file_;
  std::string path_;
};

// gzip inflated on the reader's own thread, straight into the reader's buffer (no copy): for
// callers that already keep every core busy with one reader each.
class GzipSource : public ByteSource {
 public:
  GzipSource(FILE* file, std::string path) : inflater_(file, std::move(path)) {}

  // The bytes inflated before damage come first; the inflater keeps the error for the next call.
  StatusOr<size_t> Read(char* buffer, size_t capacity) override {
    size_t filled = 0;
    Status status = inflater_.Inflate(buffer, capacity, &filled);
    if (filled == 0 && !status.ok()) return status;
    return filled;
  }
  bool compressed() const override { return true; }

 private:
  GzipInflater inflater_;
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

  GzipInflater inflater_;  // used by the worker only
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

}  // namespace

StatusOr<std::unique_ptr<ByteSource>> OpenByteSource(const std::string& path, bool inflate_on_helper_thread) {
  StatusOr<FILE*> opened = OpenStreamForReading(path, kMaxTraceFileBytes, nullptr);
  if (!opened.ok()) return opened.status();
  FILE* file = *opened;
  unsigned char magic[2] = {0, 0};
  size_t n = std::fread(magic, 1, 2, file);
  std::rewind(file);
  if (n == 2 && magic[0] == 0x1f && magic[1] == 0x8b) {
    if (inflate_on_helper_thread) return std::unique_ptr<ByteSource>(new ThreadedGzipSource(file, path));
    return std::unique_ptr<ByteSource>(new GzipSource(file, path));
  }
  return std::unique_ptr<ByteSource>(new FileSource(file, path));
}

}  // namespace eroica
