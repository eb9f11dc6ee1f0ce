// StatusOr<T>: a value or the sdk::Status explaining why there is none. The host uses the same
// Status type as plugins so codes, reasons and messages travel unchanged into Conditions.
#pragma once

#include <banlieue/sdk/status.h>

#include <cassert>
#include <optional>
#include <utility>

namespace banlieue {

using sdk::Code;
using sdk::Status;

template <class T>
class [[nodiscard]] StatusOr {
 public:
  StatusOr(T value) : value_(std::move(value)) {}         // NOLINT(google-explicit-constructor)
  StatusOr(Status status) : status_(std::move(status)) {  // NOLINT(google-explicit-constructor)
    assert(!status_.isOk());
  }

  bool ok() const { return value_.has_value(); }
  const Status& status() const { return status_; }
  T& value() & { return *value_; }
  const T& value() const& { return *value_; }
  T&& value() && { return std::move(*value_); }
  T* operator->() { return &*value_; }
  const T* operator->() const { return &*value_; }
  T& operator*() { return *value_; }

 private:
  std::optional<T> value_;
  Status status_;
};

// Shorthand for a failed Status with a reason and message.
inline Status error(Code code, std::string reason, std::string message) {
  return Status(code, std::move(reason), std::move(message));
}

}  // namespace banlieue
