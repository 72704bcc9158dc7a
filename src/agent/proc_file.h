// A /proc or /sys file read again and again: the descriptor stays open and each Read() is a
// pread() at offset 0, which makes the kernel regenerate the text. That saves the path lookup
// of open() on every sample (most of the cost at 100 Hz). A process that exited makes the
// read fail (ESRCH), which is how the collectors notice it is gone.
//
// Files are expected to be rewritten in place; a file replaced by rename() keeps reading the
// old inode (test trees write in place).
#pragma once

#include <string>
#include <string_view>

namespace eroica::agent {

class ProcFile {
 public:
  explicit ProcFile(std::string path = "") : path_(std::move(path)) {}
  ~ProcFile();
  ProcFile(ProcFile&& other) noexcept;
  ProcFile& operator=(ProcFile&& other) noexcept;
  ProcFile(const ProcFile&) = delete;
  ProcFile& operator=(const ProcFile&) = delete;

  // Reads the whole file (at most max_bytes) into an internal buffer; returns false on
  // error, with error() set to the errno.
  bool Read(size_t max_bytes = 1 << 20);
  std::string_view contents() const { return contents_; }
  int error() const { return error_; }
  const std::string& path() const { return path_; }
  // Closes the descriptor; the next Read() opens the file again.
  void Close();

 private:
  std::string path_;
  int fd_ = -1;
  int error_ = 0;
  std::string buffer_;
  std::string_view contents_;
};

// One-shot read of a small file, trimmed of trailing whitespace; "" on error.
std::string ReadTrimmed(const std::string& path);

}  // namespace eroica::agent
