// libFuzzer target: a stack-samples file (the training thread's and its DataLoader workers'; a
// session folder may hold one someone else planted) read onto a small trace's clock and
// attributed over its critical path by the summarizer.
#include <cstdint>
#include <optional>
#include <string>

#include "base/fuzz_scratch.h"
#include "summary/stack_samples.h"
#include "summary/summarizer.h"
#include "trace/reader.h"

namespace {

// Two 1000 µs iterations: the loader, Python, an op.
constexpr std::string_view kTrace = R"([
{"name":"ProfilerStep#0","ph":"X","ts":0,"dur":1000,"tid":1,"pid":7},
{"name":"enumerate(DataLoader)#_MultiProcessingDataLoaderIter.__next__","ph":"X","ts":0,"dur":300,"tid":1,"pid":7},
{"name":"aten::mm","ph":"X","ts":500,"dur":400,"tid":1,"pid":7},
{"name":"ProfilerStep#1","ph":"X","ts":1000,"dur":1000,"tid":1,"pid":7},
{"name":"enumerate(DataLoader)#_MultiProcessingDataLoaderIter.__next__","ph":"X","ts":1000,"dur":300,"tid":1,"pid":7},
{"name":"aten::mm","ph":"X","ts":1500,"dur":400,"tid":1,"pid":7}])";

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  static const std::optional<eroica::Trace> trace = []() -> std::optional<eroica::Trace> {
    eroica::StatusOr<eroica::Trace> read = eroica::ReadTrace(eroica::WriteFuzzScratch(kTrace, "rank-0.json"));
    if (!read.ok()) return std::nullopt;
    return std::move(*read);
  }();
  if (!trace) __builtin_trap();  // the fixed trace must read
  eroica::StatusOr<eroica::StackSamples> samples = eroica::ParseStackSamples(
      std::string_view(reinterpret_cast<const char*>(data), size), *trace, "rank-0.stacks.json");
  if (!samples.ok()) return 0;
  eroica::SummarizeOptions options;
  options.stack_samples = std::move(*samples);
  (void)eroica::Summarize(*trace, options);
  return 0;
}
