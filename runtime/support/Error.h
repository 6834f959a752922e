// Errors as values: every fallible runtime/importer call returns Status or
// ErrorOr<T>, whose message names the input and what is wrong, on one line.
#pragma once

#include <cassert>
#include <optional>
#include <string>
#include <utility>

namespace quill {

/// The outcome of an operation that returns nothing: ok, or one message.
class Status {
public:
  static Status ok() { return Status(); }
  static Status error(std::string message) {
    Status s;
    s.message_ = std::move(message);
    s.failed_ = true;
    return s;
  }
  bool isOk() const { return !failed_; }
  explicit operator bool() const { return !failed_; }
  const std::string &message() const { return message_; }

private:
  std::string message_;
  bool failed_ = false;
};

/// A value or the message saying why there is none.
template <typename T> class ErrorOr {
public:
  ErrorOr(T value) : value_(std::move(value)) {}
  ErrorOr(Status status) : status_(std::move(status)) {
    assert(!status_.isOk() && "ErrorOr built from an ok Status");
  }
  bool isOk() const { return value_.has_value(); }
  explicit operator bool() const { return isOk(); }
  const std::string &message() const { return status_.message(); }
  Status status() const { return status_; }
  T &operator*() { return *value_; }
  const T &operator*() const { return *value_; }
  T *operator->() { return &*value_; }
  const T *operator->() const { return &*value_; }
  T take() { return std::move(*value_); }

private:
  std::optional<T> value_;
  Status status_;
};

} // namespace quill
