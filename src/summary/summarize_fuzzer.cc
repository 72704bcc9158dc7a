// libFuzzer target (clang only): cmake -DCMAKE_CXX_COMPILER=clang++ -DEROICA_FUZZ=ON, then
// build/src/summary/summarize_fuzzer CORPUS_DIR.
#include <unistd.h>

#include <cstdint>
#include <string>

#include "summary/fuzz_input.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  static const std::string scratch = "/tmp/eroica-fuzz-" + std::to_string(getpid()) + ".json";
  eroica::SummarizeFuzzInput(std::string_view(reinterpret_cast<const char*>(data), size), scratch);
  return 0;
}
