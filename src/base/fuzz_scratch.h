// For fuzz targets whose reader takes a path: the input bytes in a per-process scratch file.
#pragma once

#include <unistd.h>

#include <fstream>
#include <set>
#include <string>
#include <string_view>

namespace eroica {

// Scratch files are removed when the fuzzer exits (libFuzzer returns through exit(), which runs
// static destructors), so repeated fuzz runs leave nothing behind in /tmp.
class FuzzScratchFiles {
 public:
  FuzzScratchFiles() = default;
  FuzzScratchFiles(const FuzzScratchFiles&) = delete;
  FuzzScratchFiles& operator=(const FuzzScratchFiles&) = delete;
  ~FuzzScratchFiles() {
    for (const std::string& path : paths_) ::unlink(path.c_str());
  }
  void Remember(const std::string& path) { paths_.insert(path); }

 private:
  std::set<std::string> paths_;
};

inline std::string WriteFuzzScratch(std::string_view bytes, std::string_view name) {
  static FuzzScratchFiles files;
  std::string path = "/tmp/eroica-fuzz-" + std::to_string(::getpid()) + "-" + std::string(name);
  files.Remember(path);
  std::ofstream out(path, std::ios::binary | std::ios::trunc);
  out.write(bytes.data(), static_cast<std::streamsize>(bytes.size()));
  return path;
}

}  // namespace eroica
