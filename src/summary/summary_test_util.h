// Test helpers shared by the summary tests: summarize a trace given as JSON text.
#pragma once

#include <gtest/gtest.h>

#include <map>
#include <string>
#include <string_view>

#include "base/temp_dir.h"
#include "summary/summarizer.h"
#include "trace/reader.h"

namespace eroica {

inline std::map<std::string, double> BetaByName(const WorkerPattern& p) {
  std::map<std::string, double> betas;
  for (const FunctionPattern& f : p.functions) betas[f.name] += f.beta;
  return betas;
}

inline WorkerPattern SummarizeText(std::string_view json, const std::string& name = "rank-0.json") {
  TempDir dir;
  StatusOr<Trace> trace = ReadTrace(dir.Write(name, json));
  EXPECT_TRUE(trace.ok()) << trace.status().message();
  if (!trace.ok()) return {};
  StatusOr<Summary> summary = Summarize(*trace);
  EXPECT_TRUE(summary.ok()) << summary.status().message();
  return summary.ok() ? summary->pattern : WorkerPattern{};
}

}  // namespace eroica
