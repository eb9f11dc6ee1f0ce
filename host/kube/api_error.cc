#include "host/kube/api_error.h"

#include <banlieue/sdk/json.h>

namespace banlieue::kube {
namespace {

namespace json = sdk::json;

struct Mapping {
  Code code;
  const char* reason;
};

Mapping byHttpStatus(int status) {
  switch (status) {
    case 400: return {Code::kInvalidArgument, "BadRequest"};
    case 401: return {Code::kUnauthenticated, "Unauthorized"};
    case 403: return {Code::kPermissionDenied, "Forbidden"};
    case 404: return {Code::kNotFound, "NotFound"};
    case 405: return {Code::kUnimplemented, "MethodNotAllowed"};
    case 409: return {Code::kAborted, "Conflict"};
    case 410: return {Code::kOutOfRange, "Gone"};
    case 415: return {Code::kInvalidArgument, "UnsupportedMediaType"};
    case 422: return {Code::kInvalidArgument, "Invalid"};
    case 429: return {Code::kResourceExhausted, "TooManyRequests"};
    case 500: return {Code::kInternal, "InternalError"};
    case 503: return {Code::kUnavailable, "ServiceUnavailable"};
    case 504: return {Code::kDeadlineExceeded, "Timeout"};
    default: return {status >= 500 ? Code::kUnavailable : Code::kUnknown, "Unknown"};
  }
}

}  // namespace

std::optional<std::chrono::seconds> retryAfter(const HttpResponse& response) {
  auto it = response.headers.find("retry-after");
  if (it == response.headers.end()) return std::nullopt;
  try {
    return std::chrono::seconds(std::stoll(it->second));
  } catch (...) {
    return std::nullopt;
  }
}

Status apiError(const HttpResponse& response, const std::string& what) {
  Mapping mapping = byHttpStatus(response.status);
  std::string reason = mapping.reason;
  std::string message;
  rapidjson::Document doc;
  if (!json::nestsDeeperThan(response.body)) doc.Parse(response.body.data(), response.body.size());
  if (doc.IsObject() && !doc.HasParseError() && json::stringOr(&doc, "kind") == "Status") {
    if (auto r = json::string(&doc, "reason"); r && !r->empty()) reason = std::string(*r);
    message = json::stringOr(&doc, "message");
    if (const auto* causes = json::find(&doc, "details.causes"); causes && causes->IsArray()) {
      for (const auto& cause : causes->GetArray()) {
        std::string field = json::stringOr(&cause, "field");
        std::string text = json::stringOr(&cause, "message");
        if (!field.empty() && message.find(field) == std::string::npos)
          message.append("; ").append(field).append(": ").append(text);
      }
    }
  } else {
    message = response.body.substr(0, 512);
  }
  // AlreadyExists arrives as 409 too; keep the code meaningful for callers of the policy.
  Code code = reason == "AlreadyExists" ? Code::kAlreadyExists
              : reason == "Expired"     ? Code::kOutOfRange
                                        : mapping.code;
  std::string text =
      what + ": " + (message.empty() ? "HTTP " + std::to_string(response.status) : message);
  if (auto after = retryAfter(response))
    text += " (retry after " + std::to_string(after->count()) + " s)";
  return error(code, reason, text);
}

}  // namespace banlieue::kube
