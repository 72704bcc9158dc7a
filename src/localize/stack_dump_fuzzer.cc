// libFuzzer target: hang stack dumps (ReadStackDump, then FindHang over them).
#include <cstdint>
#include <string>
#include <vector>

#include "base/fuzz_scratch.h"
#include "localize/hang.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  std::string path =
      eroica::WriteFuzzScratch(std::string_view(reinterpret_cast<const char*>(data), size), "stacks-rank-0.json");
  eroica::StatusOr<eroica::StackDump> dump = eroica::ReadStackDump(path);
  if (!dump.ok()) return 0;
  std::vector<eroica::StackDump> dumps = {*dump, *dump};
  dumps[1].rank = dump->rank + 1;
  (void)eroica::FindHang(dumps, dump->world_size);
  return 0;
}
