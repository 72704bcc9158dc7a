// Logging for a daemon that must not flood: each kind of problem is printed once (the first
// time its key is seen) and counted afterwards. Thread-safe. Lines go to stderr, prefixed
// "eroica agent: ".
#pragma once

#include <fmt/core.h>

#include <cstdint>
#include <mutex>
#include <string>
#include <string_view>
#include <unordered_map>

namespace eroica::agent {

class ErrorLog {
 public:
  // quiet: count but print nothing (tests).
  explicit ErrorLog(bool quiet = false) : quiet_(quiet) {}

  // Prints "message" the first time `key` is reported; counts every report.
  void Report(std::string_view key, std::string_view message);

  // An informational line, always printed (startup, sessions written).
  void Info(std::string_view message);

  uint64_t total_errors() const;
  uint64_t count(std::string_view key) const;

 private:
  bool Seen(std::string_view key) const;

  static constexpr size_t kMaxKeys = 4096;  // beyond this, new keys are counted, not kept
  bool quiet_;
  mutable std::mutex mu_;
  std::unordered_map<std::string, uint64_t> counts_;
  uint64_t total_ = 0;
};

}  // namespace eroica::agent
