// libFuzzer target: a plain-JSON trace through the reader and the summarizer. Built by
// `make build-san` (clang, -DEROICA_FUZZ=ON); seeds in tests/fuzz/corpus/summarize_fuzzer.
#include <cstdint>
#include <string>

#include "base/fuzz_scratch.h"
#include "summary/fuzz_input.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  std::string_view bytes(reinterpret_cast<const char*>(data), size);
  // Tiny chunks as well as the default, so chunk boundaries fall everywhere.
  std::string path = eroica::WriteFuzzScratch(bytes, "trace.json");
  eroica::SummarizeFuzzFile(path, {.chunk_bytes = size % 2 ? 256 : size_t{1} << 20});
  return 0;
}
