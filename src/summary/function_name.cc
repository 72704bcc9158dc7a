#include "summary/function_name.h"

#include <fmt/core.h>

#include <cctype>

namespace eroica {
namespace {

constexpr size_t kMaxNameLength = 160;

// "void ns::kernel<...>(args)" -> "ns::kernel". Nested templates and "(anonymous namespace)"
// are handled by stopping at the first '<' or a '(' that opens the parameter list.
std::string KernelName(std::string_view name) {
  if (name.starts_with("void ")) name.remove_prefix(5);
  std::string out;
  for (size_t i = 0; i < name.size(); ++i) {
    char c = name[i];
    if (c == '<') break;
    if (c == '(') {
      if (name.substr(i).starts_with("(anonymous namespace)")) {
        out += "(anonymous namespace)";
        i += 20;
        continue;
      }
      break;
    }
    out.push_back(c);
  }
  return out.empty() ? std::string(name.substr(0, kMaxNameLength)) : out;
}

// "path/file.py(123): func" -> "path/file.py:123(func)".
std::string PythonName(std::string_view name) {
  size_t open = name.find(".py(");
  if (open == std::string_view::npos) return std::string(name.substr(0, kMaxNameLength));
  size_t close = name.find("): ", open);
  if (close == std::string_view::npos) return std::string(name.substr(0, kMaxNameLength));
  std::string_view file = name.substr(0, open + 3);
  std::string_view line = name.substr(open + 4, close - open - 4);
  std::string_view func = name.substr(close + 3);
  return fmt::format("{}:{}({})", file, line, func);
}

// The collective a kernel or CPU range stands for ("ncclDevKernel_AllGather_RING_LL" ->
// "allgather"); "" when the name does not say (RCCL's ncclDevKernel_Generic).
std::string CollectiveFromName(std::string_view name) {
  for (std::string_view prefix :
       {"ncclKernel_", "ncclDevKernel_", "rcclKernel_", "nccl:", "gloo:", "c10d::", "mpi:", "ucc:"}) {
    if (name.starts_with(prefix)) {
      name.remove_prefix(prefix.size());
      break;
    }
  }
  if (name.starts_with("Generic")) return "";
  size_t end = name.find_first_of("_(");
  // Kernel names put the op before the first '_' (AllReduce_RING_LL); CPU names use '_' inside
  // the op (all_reduce): keep those whole.
  if (end != std::string_view::npos && name[0] >= 'A' && name[0] <= 'Z') name = name.substr(0, end);
  return CanonicalCollective(name);
}

}  // namespace

std::string CanonicalCollective(std::string_view text) {
  std::string out;
  for (char c : text) {
    if (c == '(') break;
    if (c == '_') continue;
    out.push_back(static_cast<char>(std::tolower(static_cast<unsigned char>(c))));
  }
  for (std::string_view suffix : {"base", "coalesced", "tensor", "into"}) {
    if (out.size() > suffix.size() + 3 && out.ends_with(suffix)) out.resize(out.size() - suffix.size());
  }
  return out;
}

std::string SizeBucket(int64_t bytes) {
  if (bytes <= 0) return "0B";
  int64_t bucket = 1;
  while (bucket < bytes && bucket < (int64_t{1} << 60)) bucket *= 4;
  if (bucket >= (int64_t{1} << 30)) return fmt::format("{}GiB", bucket >> 30);
  if (bucket >= (int64_t{1} << 20)) return fmt::format("{}MiB", bucket >> 20);
  if (bucket >= (int64_t{1} << 10)) return fmt::format("{}KiB", bucket >> 10);
  return fmt::format("{}B", bucket);
}

std::string FunctionName(EventRole role, std::string_view name, std::string_view collective_arg, int64_t bytes) {
  switch (role) {
    case EventRole::kDeviceComm:
    case EventRole::kCpuComm: {
      if (name.starts_with("record_param_comms")) return "record_param_comms";
      std::string op = collective_arg.empty() ? CollectiveFromName(name) : CanonicalCollective(collective_arg);
      if (op.empty()) op = role == EventRole::kDeviceComm ? KernelName(name) : std::string(name);
      if (bytes > 0) return fmt::format("{} {}", op, SizeBucket(bytes));
      return op;
    }
    case EventRole::kDeviceCompute:
    case EventRole::kDeviceMemory:
      return KernelName(name).substr(0, kMaxNameLength);
    case EventRole::kPython:
      return PythonName(name);
    default:
      return std::string(name.substr(0, kMaxNameLength));
  }
}

std::string FoldedTailName(Category category) { return "(other " + std::string(CategoryName(category)) + ")"; }

std::string InParentheses(const std::string& name) {
  if (name.size() >= 2 && name.front() == '(' && name.back() == ')') return name;
  return "(" + name + ")";
}

}  // namespace eroica
