#include "agent/proc_file.h"

#include <fcntl.h>
#include <unistd.h>

#include <cerrno>
#include <utility>

namespace eroica::agent {

ProcFile::~ProcFile() { Close(); }

ProcFile::ProcFile(ProcFile&& other) noexcept
    : path_(std::move(other.path_)), fd_(std::exchange(other.fd_, -1)), error_(other.error_) {}

ProcFile& ProcFile::operator=(ProcFile&& other) noexcept {
  if (this != &other) {
    Close();
    path_ = std::move(other.path_);
    fd_ = std::exchange(other.fd_, -1);
    error_ = other.error_;
    contents_ = {};
  }
  return *this;
}

void ProcFile::Close() {
  if (fd_ >= 0) ::close(fd_);
  fd_ = -1;
}

bool ProcFile::Read(size_t max_bytes) {
  contents_ = {};
  if (fd_ < 0) {
    fd_ = ::open(path_.c_str(), O_RDONLY | O_CLOEXEC);
    if (fd_ < 0) {
      error_ = errno;
      return false;
    }
  }
  if (buffer_.size() < 4096) buffer_.resize(4096);
  size_t size = 0;
  while (true) {
    ssize_t n = ::pread(fd_, buffer_.data() + size, buffer_.size() - size, size);
    if (n < 0) {
      if (errno == EINTR) continue;
      error_ = errno;
      return false;
    }
    size += static_cast<size_t>(n);
    if (n == 0 || size < buffer_.size()) break;
    if (buffer_.size() >= max_bytes) break;  // bounded: keep what fits
    buffer_.resize(std::min(buffer_.size() * 2, max_bytes));
  }
  error_ = 0;
  contents_ = std::string_view(buffer_.data(), size);
  return true;
}

std::string ReadTrimmed(const std::string& path) {
  ProcFile file(path);
  if (!file.Read(64 << 10)) return "";
  std::string_view text = file.contents();
  while (!text.empty() && (text.back() == '\n' || text.back() == ' ' || text.back() == '\0')) {
    text.remove_suffix(1);
  }
  return std::string(text);
}

}  // namespace eroica::agent
