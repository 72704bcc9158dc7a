#include "base/file_util.h"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <atomic>
#include <cerrno>
#include <cstring>
#include <random>

namespace eroica {
namespace {

std::string UniqueSuffix() {
  static std::atomic<uint64_t> counter{0};
  static const uint64_t seed = std::random_device{}();
  return fmt::format(".tmp.{}.{:x}{:x}", ::getpid(), seed & 0xffffff, counter.fetch_add(1));
}

std::string ParentOf(const std::string& path) {
  size_t slash = path.find_last_of('/');
  if (slash == std::string::npos) return "";
  return slash == 0 ? "/" : path.substr(0, slash);
}

const char* KindOf(mode_t mode) {
  if (S_ISDIR(mode)) return "a folder";
  if (S_ISFIFO(mode)) return "a FIFO";
  if (S_ISCHR(mode) || S_ISBLK(mode)) return "a device";
  if (S_ISSOCK(mode)) return "a socket";
  return "not a regular file";
}

}  // namespace

ScopedFd& ScopedFd::operator=(ScopedFd&& other) noexcept {
  if (this != &other) {
    Reset();
    fd_ = other.Release();
  }
  return *this;
}

int ScopedFd::Release() {
  int fd = fd_;
  fd_ = -1;
  return fd;
}

void ScopedFd::Reset() {
  if (fd_ >= 0) ::close(fd_);
  fd_ = -1;
}

StatusOr<OpenedFile> OpenForReading(const std::string& path, uint64_t max_bytes) {
  ScopedFd fd(::open(path.c_str(), O_RDONLY | O_NOFOLLOW | O_NONBLOCK | O_CLOEXEC));
  if (fd.get() < 0) {
    if (errno == ELOOP) return ErrorStatus("{}: is a symlink; not followed", path);
    return ErrorStatus("{}: cannot open: {}", path, std::strerror(errno));
  }
  struct stat info {};
  if (::fstat(fd.get(), &info) != 0) {
    return ErrorStatus("{}: cannot stat: {}", path, std::strerror(errno));
  }
  if (!S_ISREG(info.st_mode)) return ErrorStatus("{}: {}; not read", path, KindOf(info.st_mode));
  if (static_cast<uint64_t>(info.st_size) > max_bytes) {
    return ErrorStatus("{}: {} bytes, more than the {} this reader accepts", path, info.st_size, max_bytes);
  }
  int flags = ::fcntl(fd.get(), F_GETFL);
  if (flags >= 0) ::fcntl(fd.get(), F_SETFL, flags & ~O_NONBLOCK);
  return OpenedFile{std::move(fd), static_cast<int64_t>(info.st_size)};
}

StatusOr<FILE*> OpenStreamForReading(const std::string& path, uint64_t max_bytes, int64_t* size_bytes) {
  StatusOr<OpenedFile> opened = OpenForReading(path, max_bytes);
  if (!opened.ok()) return opened.status();
  FILE* stream = ::fdopen(opened->fd.get(), "rb");
  if (stream == nullptr) return ErrorStatus("{}: cannot open: {}", path, std::strerror(errno));
  opened->fd.Release();
  if (size_bytes != nullptr) *size_bytes = opened->size_bytes;
  return stream;
}

StatusOr<std::string> ReadSmallFile(const std::string& path, size_t max_bytes) {
  StatusOr<OpenedFile> opened = OpenForReading(path, max_bytes);
  if (!opened.ok()) return opened.status();
  std::string contents;
  // The size is only a hint (the file may grow or shrink while read); the bound is enforced
  // on what is actually read.
  contents.reserve(static_cast<size_t>(opened->size_bytes));
  char buffer[1 << 16];
  while (true) {
    ssize_t n = ::read(opened->fd.get(), buffer, sizeof(buffer));
    if (n < 0 && errno == EINTR) continue;
    if (n < 0) return ErrorStatus("{}: read error: {}", path, std::strerror(errno));
    if (n == 0) break;
    contents.append(buffer, static_cast<size_t>(n));
    if (contents.size() > max_bytes) return ErrorStatus("{}: larger than {} bytes", path, max_bytes);
  }
  return contents;
}

StatusOr<AtomicFileWriter> AtomicFileWriter::Create(const std::string& path, unsigned mode) {
  std::string temp_path = path + UniqueSuffix();
  int fd = ::open(temp_path.c_str(), O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC, mode);
  if (fd < 0) return ErrorStatus("{}: cannot create: {}", temp_path, std::strerror(errno));
  ::fchmod(fd, mode);  // the umask may have narrowed it; never wider than asked
  FILE* stream = ::fdopen(fd, "wb");
  if (stream == nullptr) {
    ::close(fd);
    ::unlink(temp_path.c_str());
    return ErrorStatus("{}: cannot create: {}", temp_path, std::strerror(errno));
  }
  return AtomicFileWriter(path, std::move(temp_path), stream);
}

AtomicFileWriter::AtomicFileWriter(AtomicFileWriter&& other) noexcept
    : path_(std::move(other.path_)), temp_path_(std::move(other.temp_path_)), stream_(other.stream_) {
  other.stream_ = nullptr;
}

AtomicFileWriter::~AtomicFileWriter() { Abandon(); }

void AtomicFileWriter::Abandon() {
  if (stream_ == nullptr) return;
  std::fclose(stream_);
  stream_ = nullptr;
  ::unlink(temp_path_.c_str());
}

Status AtomicFileWriter::Commit() {
  if (stream_ == nullptr) return ErrorStatus("{}: already written", path_);
  bool ok = std::fflush(stream_) == 0 && std::ferror(stream_) == 0 && ::fsync(fileno(stream_)) == 0;
  int saved = errno;
  ok = (std::fclose(stream_) == 0) && ok;
  stream_ = nullptr;
  if (!ok) {
    ::unlink(temp_path_.c_str());
    return ErrorStatus("{}: write failed: {}", path_, std::strerror(saved));
  }
  if (::rename(temp_path_.c_str(), path_.c_str()) != 0) {
    saved = errno;
    ::unlink(temp_path_.c_str());
    return ErrorStatus("{}: cannot rename into place: {}", path_, std::strerror(saved));
  }
  return Status::Ok();
}

Status WriteFileAtomically(const std::string& path, std::string_view contents, unsigned mode) {
  StatusOr<AtomicFileWriter> writer = AtomicFileWriter::Create(path, mode);
  if (!writer.ok()) return writer.status();
  if (std::fwrite(contents.data(), 1, contents.size(), writer->stream()) != contents.size()) {
    return ErrorStatus("{}: write failed (disk full?)", path);
  }
  return writer->Commit();
}

Status EnsureOwnDirectory(const std::string& path) {
  if (path.empty()) return ErrorStatus("empty folder name");
  if (::mkdir(path.c_str(), 0700) != 0) {
    if (errno == ENOENT) {
      std::string parent = ParentOf(path);
      if (!parent.empty() && parent != path) EROICA_RETURN_IF_ERROR(EnsureOwnDirectory(parent));
      if (::mkdir(path.c_str(), 0700) != 0 && errno != EEXIST) {
        return ErrorStatus("{}: cannot create folder: {}", path, std::strerror(errno));
      }
    } else if (errno != EEXIST) {
      return ErrorStatus("{}: cannot create folder: {}", path, std::strerror(errno));
    }
  }
  struct stat info {};
  if (::stat(path.c_str(), &info) != 0) {
    return ErrorStatus("{}: cannot stat: {}", path, std::strerror(errno));
  }
  if (!S_ISDIR(info.st_mode)) return ErrorStatus("{}: exists and is not a folder", path);
  if (info.st_uid != ::geteuid()) {
    return ErrorStatus(
        "{}: owned by uid {}, not by this user (uid {}); refusing to write into "
        "it (use a folder of your own)",
        path, info.st_uid, ::geteuid());
  }
  if ((info.st_mode & S_IWOTH) != 0 && (info.st_mode & S_ISVTX) == 0) {
    return ErrorStatus(
        "{}: writable by every user and not sticky (mode {:o}); refusing to "
        "write into it (chmod o-w or +t)",
        path, info.st_mode & 07777);
  }
  return Status::Ok();
}

}  // namespace eroica
