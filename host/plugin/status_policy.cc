#include "host/plugin/status_policy.h"

#include <algorithm>

namespace banlieue::plugin {

StatusPolicy policyFor(banlieue_status code) {
  using namespace std::chrono_literals;
  switch (code) {
    case BANLIEUE_OK: return {Disposition::kDone, false};
    case BANLIEUE_IN_PROGRESS: return {Disposition::kPoll, false};
    // Transient: the backend is busy, slow, locked or restarting.
    case BANLIEUE_UNAVAILABLE:
    case BANLIEUE_DEADLINE_EXCEEDED:
    case BANLIEUE_ABORTED:
    case BANLIEUE_RESOURCE_EXHAUSTED:
    case BANLIEUE_CANCELLED:
    case BANLIEUE_UNKNOWN: return {Disposition::kRetry, false};
    // Retry, but make it visible: something the object refers to is missing in the backend
    // (a template, a datastore; it may appear when an import finishes), or a bug in the
    // plugin, or an unexpected backend answer.
    case BANLIEUE_NOT_FOUND:
    case BANLIEUE_INTERNAL:
    case BANLIEUE_DATA_LOSS: return {Disposition::kRetry, true};
    // Credentials or permissions, or the backend's state in the way (a foreign VM holds the
    // name, a pool is inactive): fixed outside the object, so retry slowly.
    case BANLIEUE_UNAUTHENTICATED:
    case BANLIEUE_PERMISSION_DENIED:
    case BANLIEUE_FAILED_PRECONDITION:
    case BANLIEUE_ALREADY_EXISTS: return {Disposition::kTerminal, true, 5min};
    // The object asks for something impossible: wait for the user to change it.
    case BANLIEUE_INVALID_ARGUMENT:
    case BANLIEUE_OUT_OF_RANGE:
    case BANLIEUE_UNIMPLEMENTED: return {Disposition::kTerminal, true, 0s};
    default: return {Disposition::kRetry, true};
  }
}

std::chrono::milliseconds clampRequeueHint(int64_t hint_ms, std::chrono::milliseconds fallback) {
  if (hint_ms < 0) return fallback;
  return std::clamp(std::chrono::milliseconds(hint_ms), kMinRequeue, kMaxRequeue);
}

}  // namespace banlieue::plugin
