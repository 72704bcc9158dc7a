#include "agent/proc_parsers.h"

#include <charconv>

namespace eroica::agent {
namespace {

std::string_view SkipSpaces(std::string_view text) {
  while (!text.empty() && (text.front() == ' ' || text.front() == '\t')) text.remove_prefix(1);
  return text;
}

// Splits on spaces into at most max_fields views.
std::vector<std::string_view> SplitFields(std::string_view text, size_t max_fields) {
  std::vector<std::string_view> fields;
  while (fields.size() < max_fields) {
    text = SkipSpaces(text);
    if (text.empty() || text.front() == '\n') break;
    size_t end = text.find_first_of(" \t\n");
    if (end == std::string_view::npos) end = text.size();
    fields.push_back(text.substr(0, end));
    text.remove_prefix(end);
  }
  return fields;
}

std::string_view NextLine(std::string_view* text) {
  size_t end = text->find('\n');
  std::string_view line = text->substr(0, end);
  text->remove_prefix(end == std::string_view::npos ? text->size() : end + 1);
  return line;
}

}  // namespace

bool ParseInt64(std::string_view text, int64_t* value) {
  text = SkipSpaces(text);
  const char* end = text.data() + text.size();
  auto [ptr, error] = std::from_chars(text.data(), end, *value);
  return error == std::errc() && ptr != text.data();
}

bool ParseProcStat(std::string_view text, ProcStat* stat) {
  size_t open = text.find('(');
  size_t close = text.rfind(')');
  if (open == std::string_view::npos || close == std::string_view::npos || close < open) {
    return false;
  }
  stat->comm = std::string(text.substr(open + 1, close - open - 1));
  // Field 3 (state) is the first after ')'; field n is fields[n - 3].
  std::vector<std::string_view> fields = SplitFields(text.substr(close + 1), 22);
  if (fields.size() < 22) return false;
  return ParseInt64(fields[11], &stat->utime_ticks) && ParseInt64(fields[12], &stat->stime_ticks) &&
         ParseInt64(fields[17], &stat->num_threads) && ParseInt64(fields[19], &stat->start_time_ticks) &&
         ParseInt64(fields[21], &stat->rss_pages);
}

bool ParseSchedstat(std::string_view text, int64_t* on_cpu_ns) { return ParseInt64(text, on_cpu_ns); }

bool ParseProcStatCpus(std::string_view text, std::vector<CpuTimes>* cpus) {
  cpus->clear();
  while (!text.empty()) {
    std::string_view line = NextLine(&text);
    if (line.substr(0, 3) != "cpu") {
      if (!cpus->empty()) break;  // the cpu lines come first and together
      continue;
    }
    std::vector<std::string_view> fields = SplitFields(line, 9);
    if (fields.size() < 5) return false;
    CpuTimes times;
    if (fields[0].size() > 3) {
      int64_t core = 0;
      if (!ParseInt64(fields[0].substr(3), &core)) return false;
      times.core = static_cast<int>(core);
    }
    int64_t values[8] = {0};  // user nice system idle iowait irq softirq steal
    for (size_t i = 1; i < fields.size(); ++i) {
      if (!ParseInt64(fields[i], &values[i - 1])) return false;
    }
    times.busy_ticks = values[0] + values[1] + values[2] + values[5] + values[6] + values[7];
    times.total_ticks = times.busy_ticks + values[3] + values[4];
    cpus->push_back(times);
  }
  return !cpus->empty();
}

int64_t ParseBootTimeSeconds(std::string_view text) {
  while (!text.empty()) {
    std::string_view line = NextLine(&text);
    if (line.substr(0, 6) != "btime ") continue;
    int64_t seconds = -1;
    return ParseInt64(line.substr(6), &seconds) ? seconds : -1;
  }
  return -1;
}

bool ParseMeminfo(std::string_view text, MemInfo* info) {
  while (!text.empty()) {
    std::string_view line = NextLine(&text);
    int64_t* target = nullptr;
    if (line.substr(0, 9) == "MemTotal:") target = &info->total_bytes;
    if (line.substr(0, 13) == "MemAvailable:") target = &info->available_bytes;
    if (target == nullptr) continue;
    int64_t kib = 0;
    if (!ParseInt64(line.substr(line.find(':') + 1), &kib)) return false;
    *target = kib * 1024;
  }
  return info->total_bytes >= 0;
}

}  // namespace eroica::agent
