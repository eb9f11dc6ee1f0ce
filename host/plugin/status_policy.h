// The one table that turns a plugin's status code into what a controller does next.
#pragma once

#include <banlieue/provider_v1.h>

#include <chrono>

namespace banlieue::plugin {

enum class Disposition {
  kDone,      // OK: apply the status, no requeue beyond the plugin's hint
  kPoll,      // IN_PROGRESS: store the operation token, call again after the hint
  kRetry,     // transient: after the plugin's hint when given (clamped), else exponential backoff
  kTerminal,  // the object or its configuration is wrong: Ready=False, wait for a change
};

struct StatusPolicy {
  Disposition disposition;
  bool warning_event;  // record a Warning event on the object
  // For kTerminal: a slow safety retry (credentials or backend permissions can be fixed
  // outside the object, without an event we could watch). Zero means none.
  std::chrono::seconds slow_retry{0};
};

StatusPolicy policyFor(banlieue_status code);

// How long to wait before polling an IN_PROGRESS operation when the plugin gave no hint.
inline constexpr std::chrono::milliseconds kDefaultPollInterval{std::chrono::seconds(5)};
// Bounds applied to a plugin's requeue hint.
inline constexpr std::chrono::milliseconds kMinRequeue{std::chrono::milliseconds(200)};
inline constexpr std::chrono::milliseconds kMaxRequeue{std::chrono::minutes(10)};

std::chrono::milliseconds clampRequeueHint(int64_t hint_ms, std::chrono::milliseconds fallback);

}  // namespace banlieue::plugin
