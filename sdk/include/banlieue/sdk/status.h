// Status values and the one exception type plugin code may throw.
//
// Plugin code either returns a Status or throws banlieue::sdk::Error; the SDK's trampolines
// turn both into a banlieue_status plus message and Condition reason. Any other exception
// becomes BANLIEUE_INTERNAL: nothing unwinds across the ABI.
#pragma once

#include <banlieue/provider_v1.h>

#include <stdexcept>
#include <string>
#include <string_view>

namespace banlieue::sdk {

enum class Code : banlieue_status {
  kOk = BANLIEUE_OK,
  kCancelled = BANLIEUE_CANCELLED,
  kUnknown = BANLIEUE_UNKNOWN,
  kInvalidArgument = BANLIEUE_INVALID_ARGUMENT,
  kDeadlineExceeded = BANLIEUE_DEADLINE_EXCEEDED,
  kNotFound = BANLIEUE_NOT_FOUND,
  kAlreadyExists = BANLIEUE_ALREADY_EXISTS,
  kPermissionDenied = BANLIEUE_PERMISSION_DENIED,
  kResourceExhausted = BANLIEUE_RESOURCE_EXHAUSTED,
  kFailedPrecondition = BANLIEUE_FAILED_PRECONDITION,
  kAborted = BANLIEUE_ABORTED,
  kOutOfRange = BANLIEUE_OUT_OF_RANGE,
  kUnimplemented = BANLIEUE_UNIMPLEMENTED,
  kInternal = BANLIEUE_INTERNAL,
  kUnavailable = BANLIEUE_UNAVAILABLE,
  kDataLoss = BANLIEUE_DATA_LOSS,
  kUnauthenticated = BANLIEUE_UNAUTHENTICATED,
  kInProgress = BANLIEUE_IN_PROGRESS,
};

// Canonical upper-snake name of a code ("INVALID_ARGUMENT"); "CODE_<n>" for unknown values.
inline std::string codeName(banlieue_status code) {
  switch (code) {
    case BANLIEUE_OK: return "OK";
    case BANLIEUE_CANCELLED: return "CANCELLED";
    case BANLIEUE_UNKNOWN: return "UNKNOWN";
    case BANLIEUE_INVALID_ARGUMENT: return "INVALID_ARGUMENT";
    case BANLIEUE_DEADLINE_EXCEEDED: return "DEADLINE_EXCEEDED";
    case BANLIEUE_NOT_FOUND: return "NOT_FOUND";
    case BANLIEUE_ALREADY_EXISTS: return "ALREADY_EXISTS";
    case BANLIEUE_PERMISSION_DENIED: return "PERMISSION_DENIED";
    case BANLIEUE_RESOURCE_EXHAUSTED: return "RESOURCE_EXHAUSTED";
    case BANLIEUE_FAILED_PRECONDITION: return "FAILED_PRECONDITION";
    case BANLIEUE_ABORTED: return "ABORTED";
    case BANLIEUE_OUT_OF_RANGE: return "OUT_OF_RANGE";
    case BANLIEUE_UNIMPLEMENTED: return "UNIMPLEMENTED";
    case BANLIEUE_INTERNAL: return "INTERNAL";
    case BANLIEUE_UNAVAILABLE: return "UNAVAILABLE";
    case BANLIEUE_DATA_LOSS: return "DATA_LOSS";
    case BANLIEUE_UNAUTHENTICATED: return "UNAUTHENTICATED";
    case BANLIEUE_IN_PROGRESS: return "IN_PROGRESS";
    default: return "CODE_" + std::to_string(code);
  }
}
inline std::string codeName(Code code) {
  return codeName(static_cast<banlieue_status>(code));
}

// True for the codes the v1 ABI defines; anything else from a plugin is a contract breach.
inline bool isKnownCode(banlieue_status code) {
  return (code >= BANLIEUE_OK && code <= BANLIEUE_UNAUTHENTICATED) || code == BANLIEUE_IN_PROGRESS;
}

// A Condition reason must be CamelCase: a leading capital, then letters and digits only.
inline bool isConditionReason(std::string_view reason) {
  if (reason.empty() || reason.size() > 1024 || reason[0] < 'A' || reason[0] > 'Z') return false;
  for (char c : reason) {
    bool ok = (c >= 'A' && c <= 'Z') || (c >= 'a' && c <= 'z') || (c >= '0' && c <= '9');
    if (!ok) return false;
  }
  return true;
}

// The outcome of one plugin operation.
class [[nodiscard]] Status {
 public:
  Status() = default;
  Status(Code code, std::string reason, std::string message)
      : code_(code), reason_(std::move(reason)), message_(std::move(message)) {}

  static Status ok() { return {}; }
  // The call advanced a backend task that is still running; set an operation token on the
  // reply so the next call can poll it.
  static Status inProgress(std::string reason = "InProgress", std::string message = {}) {
    return {Code::kInProgress, std::move(reason), std::move(message)};
  }

  Code code() const { return code_; }
  bool isOk() const { return code_ == Code::kOk; }
  const std::string& reason() const { return reason_; }
  const std::string& message() const { return message_; }

 private:
  Code code_ = Code::kOk;
  std::string reason_;
  std::string message_;
};

// Throw from plugin code to fail the current call with a specific code and reason.
class Error : public std::runtime_error {
 public:
  Error(Code code, std::string reason, const std::string& message)
      : std::runtime_error(message), code_(code), reason_(std::move(reason)) {}

  Code code() const { return code_; }
  const std::string& reason() const { return reason_; }
  Status toStatus() const { return {code_, reason_, what()}; }

 private:
  Code code_;
  std::string reason_;
};

}  // namespace banlieue::sdk
