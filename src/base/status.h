// Errors as values at module boundaries (after absl::Status / perfetto::base::Status).
#pragma once

#include <fmt/core.h>

#include <cstdlib>
#include <optional>
#include <string>
#include <utility>
#include <variant>

namespace eroica {

class [[nodiscard]] Status {
 public:
  Status() = default;
  static Status Ok() { return Status(); }
  static Status Error(std::string message) { return Status(std::move(message)); }

  bool ok() const { return !message_.has_value(); }
  const std::string& message() const {
    static const std::string kEmpty;
    return message_ ? *message_ : kEmpty;
  }

 private:
  explicit Status(std::string message) : message_(std::move(message)) {}
  std::optional<std::string> message_;
};

template <typename... Args>
Status ErrorStatus(fmt::format_string<Args...> format, Args&&... args) {
  return Status::Error(fmt::format(format, std::forward<Args>(args)...));
}

template <typename T>
class [[nodiscard]] StatusOr {
 public:
  StatusOr(T value) : value_(std::move(value)) {}        // NOLINT: implicit by design
  StatusOr(Status status) : value_(std::move(status)) {  // NOLINT: implicit by design
    if (std::get<Status>(value_).ok()) std::abort();     // an error must carry a message
  }

  bool ok() const { return std::holds_alternative<T>(value_); }
  Status status() const { return ok() ? Status::Ok() : std::get<Status>(value_); }
  T& value() & { return std::get<T>(value_); }
  const T& value() const& { return std::get<T>(value_); }
  T&& value() && { return std::get<T>(std::move(value_)); }
  T* operator->() { return &value(); }
  const T* operator->() const { return &value(); }
  T& operator*() & { return value(); }
  const T& operator*() const& { return value(); }
  T&& operator*() && { return std::move(*this).value(); }

 private:
  std::variant<T, Status> value_;
};

}  // namespace eroica

#define EROICA_RETURN_IF_ERROR(expr)   \
  do {                                 \
    ::eroica::Status status_ = (expr); \
    if (!status_.ok()) return status_; \
  } while (0)

// Checks for programmer bugs: abort with a message, never for bad input.
#define EROICA_CHECK(cond)                                                                          \
  do {                                                                                              \
    if (!(cond)) {                                                                                  \
      fmt::print(stderr, "eroica: internal check failed: {} ({}:{})\n", #cond, __FILE__, __LINE__); \
      std::abort();                                                                                 \
    }                                                                                               \
  } while (0)
