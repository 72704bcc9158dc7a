// libFuzzer target: pattern files (and bundles) through ForEachPattern.
#include <cstdint>
#include <string>

#include "base/fuzz_scratch.h"
#include "summary/pattern_file.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  std::string path =
      eroica::WriteFuzzScratch(std::string_view(reinterpret_cast<const char*>(data), size), "workers.pattern");
  size_t functions = 0;
  eroica::Status status =
      eroica::ForEachPattern(path, [&](eroica::WorkerPattern&& w) { functions += w.functions.size(); });
  (void)status;
  return 0;
}
