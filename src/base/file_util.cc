#include "base/file_util.h"

#include <cerrno>
#include <cstdio>
#include <cstring>

namespace eroica {

StatusOr<std::string> ReadSmallFile(const std::string& path, size_t max_bytes) {
  FILE* file = std::fopen(path.c_str(), "rb");
  if (file == nullptr) return ErrorStatus("{}: cannot open: {}", path, std::strerror(errno));
  std::string contents;
  char buffer[1 << 16];
  size_t n;
  while ((n = std::fread(buffer, 1, sizeof(buffer), file)) > 0) {
    contents.append(buffer, n);
    if (contents.size() > max_bytes) {
      std::fclose(file);
      return ErrorStatus("{}: larger than {} bytes", path, max_bytes);
    }
  }
  bool failed = std::ferror(file) != 0;
  std::fclose(file);
  if (failed) return ErrorStatus("{}: read error", path);
  return contents;
}

Status WriteFileAtomically(const std::string& path, std::string_view contents) {
  std::string tmp = path + ".tmp";
  FILE* file = std::fopen(tmp.c_str(), "wb");
  if (file == nullptr) return ErrorStatus("{}: cannot create: {}", tmp, std::strerror(errno));
  bool ok = std::fwrite(contents.data(), 1, contents.size(), file) == contents.size();
  ok = (std::fclose(file) == 0) && ok;
  if (!ok) {
    std::remove(tmp.c_str());
    return ErrorStatus("{}: write failed (disk full?)", path);
  }
  if (std::rename(tmp.c_str(), path.c_str()) != 0) {
    return ErrorStatus("{}: cannot rename: {}", path, std::strerror(errno));
  }
  return Status::Ok();
}

}  // namespace eroica
