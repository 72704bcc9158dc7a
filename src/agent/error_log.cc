#include "agent/error_log.h"

#include <cstdio>

namespace eroica::agent {

void ErrorLog::Report(std::string_view key, std::string_view message) {
  std::lock_guard<std::mutex> lock(mu_);
  ++total_;
  auto it = counts_.find(std::string(key));
  if (it != counts_.end()) {
    ++it->second;
    return;
  }
  if (counts_.size() >= kMaxKeys) return;
  counts_.emplace(std::string(key), 1);
  if (!quiet_ && !message.empty()) {
    fmt::print(stderr, "eroica agent: {}\n", message);
  }
}

void ErrorLog::Info(std::string_view message) {
  if (quiet_) return;
  std::lock_guard<std::mutex> lock(mu_);
  fmt::print(stderr, "eroica agent: {}\n", message);
}

uint64_t ErrorLog::total_errors() const {
  std::lock_guard<std::mutex> lock(mu_);
  return total_;
}

uint64_t ErrorLog::count(std::string_view key) const {
  std::lock_guard<std::mutex> lock(mu_);
  auto it = counts_.find(std::string(key));
  return it == counts_.end() ? 0 : it->second;
}

bool ErrorLog::Seen(std::string_view key) const {
  std::lock_guard<std::mutex> lock(mu_);
  return counts_.count(std::string(key)) > 0;
}

}  // namespace eroica::agent
