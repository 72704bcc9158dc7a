// libFuzzer target: --expect files (ParseExpectations, then the distances they give).
#include <cstdint>
#include <string>

#include "localize/expectations.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  eroica::StatusOr<eroica::Expectations> e =
      eroica::ParseExpectations(std::string_view(reinterpret_cast<const char*>(data), size), "fuzz.json");
  if (!e.ok()) return 0;
  for (int c = 0; c < eroica::kCategoryCount; ++c) {
    auto category = static_cast<eroica::Category>(c);
    (void)e->CategoryDistance(category, 0.5, c % 2 == 0);
    (void)e->Distance(category, eroica::HostKind::kPython, 0.5, 0.5, 0.1, c % 2 == 1);
  }
  return 0;
}
