#include "summary/stack_samples.h"

#include <fmt/core.h>

#include <algorithm>
#include <filesystem>
#include <nlohmann/json.hpp>

#include "summary/trace_clock.h"

namespace eroica {

StatusOr<StackSamples> ParseStackSamples(std::string_view text, const Trace& trace,
                                         const std::string& path) {
  nlohmann::json doc = nlohmann::json::parse(text, nullptr, false);
  if (!doc.is_object() || doc.value("schema", "") != "eroica.stack_samples/v1") {
    return ErrorStatus("{}: not an eroica.stack_samples/v1 file", path);
  }
  std::optional<int64_t> offset = UnixClockOffset(trace, &doc);
  if (!offset)
    return ErrorStatus("{}: stack samples not used: nothing anchors the trace's clock", path);
  StackSamples out;
  try {
    out.hz = doc.value("hz", 0.0);
    for (const auto& prefix : doc.at("library_prefixes"))
      out.library_prefixes.push_back(prefix.get<std::string>());
    for (const auto& f : doc.at("frames")) {
      out.frames.push_back(
          {f.at(0).get<std::string>(), f.at(1).get<int>(), f.at(2).get<std::string>()});
    }
    for (const auto& s : doc.at("stacks")) {
      std::vector<uint32_t> stack = s.get<std::vector<uint32_t>>();
      for (uint32_t frame : stack) {
        if (frame >= out.frames.size())
          return ErrorStatus("{}: a stack names frame {} of {}", path, frame, out.frames.size());
      }
      out.stacks.push_back(std::move(stack));
    }
    for (const auto& s : doc.at("samples")) {
      auto stack = s.at(1).get<uint32_t>();
      if (stack >= out.stacks.size())
        return ErrorStatus("{}: a sample names stack {} of {}", path, stack, out.stacks.size());
      out.samples.push_back({s.at(0).get<int64_t>() - *offset, stack});
    }
  } catch (const nlohmann::json::exception& e) {
    return ErrorStatus("{}: damaged stack samples: {}", path, e.what());
  }
  std::stable_sort(out.samples.begin(), out.samples.end(),
                   [](const StackSample& a, const StackSample& b) { return a.ts_ns < b.ts_ns; });
  return out;
}

std::string StackSamplesPathFor(const Trace& trace) {
  if (trace.meta.rank < 0) return "";
  std::filesystem::path folder = std::filesystem::path(trace.meta.path).parent_path();
  return (folder / fmt::format("rank-{}.stacks.json", trace.meta.rank)).string();
}

bool LooksLikeStackSamplesFile(std::string_view name) { return name.ends_with(".stacks.json"); }

}  // namespace eroica
