// The one way eroica opens, reads and writes files. Readers open nothing but regular files,
// never follow a symlink planted in a folder others can write to, never block on a FIFO and
// read at most a stated size; writers create a fresh private temporary beside the target
// (never following or reusing a planted one), fsync it and rename it into place.
#pragma once

#include <cstdint>
#include <cstdio>
#include <string>
#include <string_view>

#include "base/status.h"

namespace eroica {

// A file descriptor closed when it goes out of scope.
class ScopedFd {
 public:
  ScopedFd() = default;
  explicit ScopedFd(int fd) : fd_(fd) {}
  ~ScopedFd() { Reset(); }
  ScopedFd(ScopedFd&& other) noexcept : fd_(other.Release()) {}
  ScopedFd& operator=(ScopedFd&& other) noexcept;
  ScopedFd(const ScopedFd&) = delete;
  ScopedFd& operator=(const ScopedFd&) = delete;

  int get() const { return fd_; }
  int Release();
  void Reset();

 private:
  int fd_ = -1;
};

struct OpenedFile {
  ScopedFd fd;
  int64_t size_bytes = 0;
};

// Opens PATH for reading: O_NOFOLLOW|O_NONBLOCK|O_CLOEXEC, then fstat — only a regular file of
// at most max_bytes is accepted (a FIFO, a device, a folder or a symlink is refused with a
// one-line error naming the path). The descriptor is left blocking again (regular files never
// block anyway).
StatusOr<OpenedFile> OpenForReading(const std::string& path, uint64_t max_bytes);

// The same, as a stdio stream (the caller fcloses it); size_bytes gets the file's size.
StatusOr<FILE*> OpenStreamForReading(const std::string& path, uint64_t max_bytes, int64_t* size_bytes);

// Reads a whole (small) file through OpenForReading; for traces use trace/byte_source.h,
// which streams.
StatusOr<std::string> ReadSmallFile(const std::string& path, size_t max_bytes = 64 << 20);

// A file written under a unique temporary name in the target's folder (created with
// O_CREAT|O_EXCL|O_NOFOLLOW, so a planted file or symlink is never followed or reused) and
// renamed over PATH by Commit(), after an fsync; dropped without Commit(), it removes the
// temporary. Readers never see half a file.
class AtomicFileWriter {
 public:
  static StatusOr<AtomicFileWriter> Create(const std::string& path, unsigned mode = 0600);
  AtomicFileWriter(AtomicFileWriter&& other) noexcept;
  AtomicFileWriter& operator=(AtomicFileWriter&&) = delete;
  ~AtomicFileWriter();

  // A stdio stream over the temporary (owned by this writer).
  FILE* stream() const { return stream_; }
  const std::string& temp_path() const { return temp_path_; }
  // Flushes, fsyncs, closes and renames; an error leaves PATH as it was.
  Status Commit();

 private:
  AtomicFileWriter(std::string path, std::string temp_path, FILE* stream)
      : path_(std::move(path)), temp_path_(std::move(temp_path)), stream_(stream) {}
  void Abandon();

  std::string path_;
  std::string temp_path_;
  FILE* stream_ = nullptr;
};

Status WriteFileAtomically(const std::string& path, std::string_view contents, unsigned mode = 0600);

// A folder this process writes into: created 0700 when missing; when it exists it must be a
// folder owned by this user and not writable by others unless sticky (like /tmp), else the
// error says why. Parents are created as needed (0700 too).
Status EnsureOwnDirectory(const std::string& path);

}  // namespace eroica
