// Kubernetes API errors as Status values: the HTTP code and the `Status` object the API
// server returns become a canonical code plus the Kubernetes reason (NotFound, Conflict,
// AlreadyExists, Invalid, Forbidden, Gone, TooManyRequests, ...), with field causes and
// Retry-After folded into the message.
#pragma once

#include "host/common/status_or.h"
#include "host/kube/http_transport.h"

#include <chrono>
#include <optional>
#include <string>

namespace banlieue::kube {

// The error for a non-2xx response; `what` names the request ("get configmaps ns/name").
Status apiError(const HttpResponse& response, const std::string& what);

// Retry-After of a 429/503 response, when present.
std::optional<std::chrono::seconds> retryAfter(const HttpResponse& response);

inline bool isNotFound(const Status& s) {
  return s.reason() == "NotFound";
}
inline bool isConflict(const Status& s) {
  return s.reason() == "Conflict";
}
inline bool isAlreadyExists(const Status& s) {
  return s.reason() == "AlreadyExists";
}
inline bool isGone(const Status& s) {
  return s.reason() == "Gone" || s.reason() == "Expired";
}
inline bool isForbidden(const Status& s) {
  return s.reason() == "Forbidden";
}
inline bool isInvalid(const Status& s) {
  return s.reason() == "Invalid";
}

}  // namespace banlieue::kube
