// Status and Result<T>: the error currency at module borders.
//
// A Status is ok or carries a code and a one-line message that says what was wrong, where
// (file, JSON path, field) and what would be valid. Result<T> holds a value or a non-ok Status.
// Value types; not thread-safe beyond ordinary value semantics.
#pragma once

#include <optional>
#include <string>
#include <utility>
#include <variant>

namespace prima {

enum class StatusCode {
  kOk = 0,
  kInvalidArgument,  // bad input: config, flags, request bodies
  kNotFound,
  kFailedPrecondition,  // e.g. a plan that does not fit
  kResourceExhausted,   // out of KV blocks, queue full
  kUnavailable,         // device, link or replica down
  kDeadlineExceeded,
  kCancelled,
  kInternal,
};

const char* status_code_name(StatusCode code);

class [[nodiscard]] Status {
 public:
  Status() = default;
  Status(StatusCode code, std::string message) : code_(code), message_(std::move(message)) {}

  static Status ok_status() { return {}; }
  bool ok() const { return code_ == StatusCode::kOk; }
  StatusCode code() const { return code_; }
  const std::string& message() const { return message_; }
  std::string to_string() const;

 private:
  StatusCode code_ = StatusCode::kOk;
  std::string message_;
};

inline Status ok_status() {
  return {};
}
inline Status invalid_argument(std::string msg) {
  return {StatusCode::kInvalidArgument, std::move(msg)};
}
inline Status failed_precondition(std::string msg) {
  return {StatusCode::kFailedPrecondition, std::move(msg)};
}
inline Status not_found(std::string msg) {
  return {StatusCode::kNotFound, std::move(msg)};
}
inline Status unavailable(std::string msg) {
  return {StatusCode::kUnavailable, std::move(msg)};
}
inline Status internal_error(std::string msg) {
  return {StatusCode::kInternal, std::move(msg)};
}

template <typename T>
class [[nodiscard]] Result {
 public:
  Result(T value) : v_(std::move(value)) {}         // NOLINT(implicit)
  Result(Status status) : v_(std::move(status)) {}  // NOLINT(implicit); must not be ok

  bool ok() const { return std::holds_alternative<T>(v_); }
  const Status& status() const {
    static const Status kOk;
    return ok() ? kOk : std::get<Status>(v_);
  }
  T& value() & { return std::get<T>(v_); }
  const T& value() const& { return std::get<T>(v_); }
  T&& value() && { return std::get<T>(std::move(v_)); }
  T* operator->() { return &value(); }
  const T* operator->() const { return &value(); }
  T& operator*() { return value(); }
  const T& operator*() const { return value(); }

 private:
  std::variant<T, Status> v_;
};

}  // namespace prima

// Propagate a non-ok Status from an expression returning Status.
#define PRIMA_RETURN_IF_ERROR(expr)        \
  do {                                     \
    ::prima::Status prima_st_ = (expr);    \
    if (!prima_st_.ok()) return prima_st_; \
  } while (0)

#define PRIMA_CONCAT_INNER_(a, b) a##b
#define PRIMA_CONCAT_(a, b) PRIMA_CONCAT_INNER_(a, b)
// Assign the value of a Result<T> expression to `lhs`, or return its Status.
#define PRIMA_ASSIGN_OR_RETURN(lhs, expr)                \
  auto PRIMA_CONCAT_(prima_res_, __LINE__) = (expr);     \
  if (!PRIMA_CONCAT_(prima_res_, __LINE__).ok())         \
    return PRIMA_CONCAT_(prima_res_, __LINE__).status(); \
  lhs = std::move(PRIMA_CONCAT_(prima_res_, __LINE__)).value()
