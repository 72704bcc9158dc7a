// For fuzz targets whose reader takes a path: the input bytes in a per-process scratch file.
#pragma once

#include <unistd.h>

#include <fstream>
#include <string>
#include <string_view>

namespace eroica {

inline std::string WriteFuzzScratch(std::string_view bytes, std::string_view name) {
  std::string path = "/tmp/eroica-fuzz-" + std::to_string(::getpid()) + "-" + std::string(name);
  std::ofstream out(path, std::ios::binary | std::ios::trunc);
  out.write(bytes.data(), static_cast<std::streamsize>(bytes.size()));
  return path;
}

}  // namespace eroica
