// libFuzzer target: session.json, rank-<r>.meta.json and diagnosis documents (the report's
// readers of files the Python side or another eroica wrote).
#include <cstdint>
#include <string>

#include "report/diagnosis_json_reader.h"
#include "report/session_info.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  std::string text(reinterpret_cast<const char*>(data), size);
  eroica::SessionInfo info;
  eroica::ParseSessionJson(text, &info);
  (void)info.HostCount();
  eroica::RankMeta meta = eroica::ParseRankMeta(text);
  (void)meta;
  (void)eroica::DiagnosisFromJsonText(text);
  return 0;
}
