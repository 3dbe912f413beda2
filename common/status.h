// Status and StatusOr: errors as values, never exceptions across module boundaries.
//
//   StatusOr<Config> c = LoadConfig(path);
//   if (!c.ok()) return c.status();
//   Use(*c);
//
// Library errors (Protobuf parse failures, LevelDB statuses, errno) are converted into a Status
// at the edge where they happen, with a message that names what was wrong and where.
#pragma once

#include <cassert>
#include <optional>
#include <string>
#include <utility>

namespace neardup {

enum class StatusCode {
  kOk = 0,
  kInvalidArgument,   // the caller's input is malformed
  kNotFound,          // a named thing does not exist
  kIoError,           // the operating system refused a read or write
  kCorruption,        // stored data is damaged
  kFailedPrecondition,// the operation does not apply to the current state
  kResourceExhausted, // a configured limit was exceeded
  kInternal,          // a bug
  kUnavailable,       // a peer cannot be reached now; the same call may succeed later
  kDeadlineExceeded,  // the call's deadline passed before it was answered
};

const char* StatusCodeName(StatusCode code);

class [[nodiscard]] Status {
 public:
  Status() = default;
  Status(StatusCode code, std::string message) : code_(code), message_(std::move(message)) {}

  static Status Ok() { return Status(); }
  bool ok() const { return code_ == StatusCode::kOk; }
  StatusCode code() const { return code_; }
  const std::string& message() const { return message_; }
  // "InvalidArgument: <message>", or "OK".
  std::string ToString() const;

 private:
  StatusCode code_ = StatusCode::kOk;
  std::string message_;
};

inline Status InvalidArgument(std::string m) { return {StatusCode::kInvalidArgument, std::move(m)}; }
inline Status NotFound(std::string m) { return {StatusCode::kNotFound, std::move(m)}; }
inline Status IoError(std::string m) { return {StatusCode::kIoError, std::move(m)}; }
inline Status Corruption(std::string m) { return {StatusCode::kCorruption, std::move(m)}; }
inline Status FailedPrecondition(std::string m) { return {StatusCode::kFailedPrecondition, std::move(m)}; }
inline Status ResourceExhausted(std::string m) { return {StatusCode::kResourceExhausted, std::move(m)}; }
inline Status Internal(std::string m) { return {StatusCode::kInternal, std::move(m)}; }
inline Status Unavailable(std::string m) { return {StatusCode::kUnavailable, std::move(m)}; }
inline Status DeadlineExceeded(std::string m) { return {StatusCode::kDeadlineExceeded, std::move(m)}; }

// Either a value or the error that prevented it. Accessing the value of an error is a bug (asserts).
template <typename T>
class [[nodiscard]] StatusOr {
 public:
  StatusOr(T value) : value_(std::move(value)) {}  // NOLINT: implicit by design
  StatusOr(Status status) : status_(std::move(status)) { assert(!status_.ok()); }  // NOLINT

  bool ok() const { return value_.has_value(); }
  const Status& status() const { return status_; }
  T& value() & { assert(ok()); return *value_; }
  const T& value() const& { assert(ok()); return *value_; }
  T&& value() && { assert(ok()); return std::move(*value_); }
  T& operator*() & { return value(); }
  const T& operator*() const& { return value(); }
  T* operator->() { return &value(); }
  const T* operator->() const { return &value(); }

 private:
  Status status_;
  std::optional<T> value_;
};

}  // namespace neardup

#define NEARDUP_CONCAT_INNER(a, b) a##b
#define NEARDUP_CONCAT(a, b) NEARDUP_CONCAT_INNER(a, b)

// Returns from the enclosing function when `expr` yields a non-OK Status.
#define RETURN_IF_ERROR(expr)                        \
  do {                                               \
    ::neardup::Status _st = (expr);                  \
    if (!_st.ok()) return _st;                       \
  } while (0)

// `ASSIGN_OR_RETURN(auto x, MakeX());` declares x from a StatusOr or returns its error.
#define ASSIGN_OR_RETURN(lhs, expr) \
  ASSIGN_OR_RETURN_IMPL(NEARDUP_CONCAT(_statusor_, __LINE__), lhs, expr)
#define ASSIGN_OR_RETURN_IMPL(tmp, lhs, expr) \
  auto tmp = (expr);                          \
  if (!tmp.ok()) return tmp.status();         \
  lhs = std::move(tmp).value()
