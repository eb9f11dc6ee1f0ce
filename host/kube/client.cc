#include "host/kube/client.h"

#include "host/common/metrics.h"
#include "host/kube/api_error.h"

#include <banlieue/sdk/json.h>
#include <banlieue/sdk/uri.h>

#include <algorithm>
#include <chrono>
#include <condition_variable>
#include <mutex>
#include <thread>

namespace banlieue::kube {
namespace {

namespace json = sdk::json;

class Query {
 public:
  Query& add(const char* key, const std::string& value) {
    if (!value.empty())
      text_ += std::string(text_.empty() ? "?" : "&") + key + "=" + sdk::percentEncode(value);
    return *this;
  }
  const std::string& str() const { return text_; }

 private:
  std::string text_;
};

std::string describe(const char* verb, const ResourceType& type, const std::string& ns,
                     const std::string& name) {
  std::string what = std::string(verb) + " " + type.plural;
  if (!ns.empty() || !name.empty())
    what += " " + (ns.empty() ? name : ns + (name.empty() ? "" : "/" + name));
  return what;
}

// The apiserver's own rule for a name in a path (IsValidPathSegmentName): it would read '/'
// and '%' as other segments and "." or ".." as dot-segments, so no object has such a name.
// Refused before sending, as client-go refuses it: escaping alone leaves the apiserver to
// decode the name back into segments.
Status checkPathSegments(const std::string& what, const std::string& ns, const std::string& name,
                         const std::string& subresource = {}) {
  for (const auto& [kind, value] : {std::pair<const char*, const std::string*>{"namespace", &ns},
                                    {"name", &name},
                                    {"subresource", &subresource}}) {
    if (*value == "." || *value == ".." || value->find_first_of("/%") != std::string::npos) {
      return error(Code::kInvalidArgument, "InvalidName",
                   what + ": " + kind + " '" + *value +
                       "' cannot be a path segment (it may not be '.' or '..' nor hold '/' "
                       "or '%')");
    }
  }
  return Status::ok();
}

// A token bucket that makes callers wait their turn (client-go's flowcontrol.TokenBucket), on
// the client's Clock so that tests move time instead of racing it.
class RequestThrottle {
 public:
  explicit RequestThrottle(const ClientOptions& options)
      : clock_(options.clock != nullptr ? *options.clock : common::SteadyClock::instance()),
        qps_(options.qps),
        burst_(std::max(1, options.burst)),
        tokens_(burst_),
        last_(clock_.now()) {}
  ~RequestThrottle() { clock_.forget(cv_); }
  RequestThrottle(const RequestThrottle&) = delete;
  RequestThrottle& operator=(const RequestThrottle&) = delete;

  void wait() {
    if (qps_ <= 0) return;
    std::unique_lock lock(mutex_);
    auto now = clock_.now();
    tokens_ = std::min(burst_, tokens_ + std::chrono::duration<double>(now - last_).count() * qps_);
    last_ = now;
    tokens_ -= 1;  // reserve now; a negative balance is the queue of waiters ahead of us
    if (tokens_ >= 0) return;
    throttled_.inc();
    const auto until = now + std::chrono::duration_cast<std::chrono::steady_clock::duration>(
                                 std::chrono::duration<double>(-tokens_ / qps_));
    while (clock_.now() < until) clock_.waitUntil(lock, cv_, until);
  }

 private:
  common::Clock& clock_;
  double qps_;
  double burst_;
  double tokens_;
  common::Clock::TimePoint last_;
  std::mutex mutex_;
  std::condition_variable cv_;  // never notified: waits end on the clock
  Counter& throttled_ =
      MetricsRegistry::global().counter("banlieue_kube_client_throttled_total",
                                        "Requests delayed by the client-side QPS/burst limit");
};

// Counts one request for /metrics as client-go does: rest_client_requests_total{code,method,host}
// ("<error>" when no response came back), and times it in rest_client_request_duration_seconds
// {verb,host} unless it is a watch (open for minutes, and counted as the GET it is).
void observeRequest(const char* method, int code, const std::string& host,
                    std::chrono::steady_clock::time_point started, bool watch = false) {
  auto& registry = MetricsRegistry::global();
  registry
      .counter("rest_client_requests_total",
               "Number of HTTP requests, partitioned by status code, method, and host.",
               {{"code", code == 0 ? "<error>" : std::to_string(code)},
                {"method", method},
                {"host", host}})
      .inc();
  if (watch) return;
  registry
      .histogram("rest_client_request_duration_seconds",
                 "Request latency in seconds. Broken down by verb and host.",
                 {{"verb", method}, {"host", host}})
      .observe(std::chrono::duration<double>(std::chrono::steady_clock::now() - started).count());
}

// Counts one write (create, update, patch, apply, delete) by resource, so a role's writes can be
// told apart: its own objects' spec and status versus Events and Lease renewals. Attempts are
// counted whatever the outcome (the code is in rest_client_requests_total): a conflicting
// write costs the apiserver as much as a successful one.
void observeWrite(const char* verb, const ResourceType& type, const std::string& subresource) {
  MetricsRegistry::global()
      .counter("banlieue_kube_write_requests_total",
               "Kubernetes API write requests by verb, API group, resource and subresource",
               {{"verb", verb},
                {"group", type.group.empty() ? "core" : type.group},
                {"resource", type.plural},
                {"subresource", subresource}})
      .inc();
}

class HttpKubeClient final : public KubeClient {
 public:
  HttpKubeClient(std::unique_ptr<HttpTransport> transport, const ClientOptions& options)
      : transport_(std::move(transport)), throttle_(options) {}

  StatusOr<rapidjson::Document> get(const ResourceType& type, const std::string& ns,
                                    const std::string& name,
                                    const std::string& subresource) override {
    std::string what = describe("get", type, ns, name);
    if (auto s = checkPathSegments(what, ns, name, subresource); !s.isOk()) return s;
    return call("GET", type.path(ns, name, subresource), {}, {}, what);
  }

  StatusOr<rapidjson::Document> getDiscovery(const std::string& path) override {
    return call("GET", path, {}, {}, "discover " + path);
  }

  StatusOr<std::string> podLogTail(const std::string& ns, const std::string& pod, int tail_lines,
                                   int limit_bytes) override {
    std::string what = "read the log of pod " + ns + "/" + pod;
    if (auto s = checkPathSegments(what, ns, pod); !s.isOk()) return s;
    Query q;
    q.add("tailLines", std::to_string(tail_lines)).add("limitBytes", std::to_string(limit_bytes));
    auto response = send("GET",
                         "/api/v1/namespaces/" + sdk::pathSegment(ns) + "/pods/" +
                             sdk::pathSegment(pod) + "/log" + q.str(),
                         {}, {}, what);
    if (!response.ok()) return response.status();
    return std::move(response->body);
  }

  StatusOr<rapidjson::Document> list(const ResourceType& type, const std::string& ns,
                                     const ListOptions& options) override {
    Query q;
    q.add("labelSelector", options.label_selector)
        .add("fieldSelector", options.field_selector)
        .add("limit", options.limit > 0 ? std::to_string(options.limit) : "")
        .add("continue", options.continue_token)
        .add("resourceVersion", options.resource_version);
    std::string what = describe("list", type, ns, "");
    if (auto s = checkPathSegments(what, ns, ""); !s.isOk()) return s;
    return call("GET", type.path(ns) + q.str(), {}, {}, what);
  }

  StatusOr<rapidjson::Document> create(const ResourceType& type, const std::string& ns,
                                       const std::string& object_json) override {
    std::string what = describe("create", type, ns, "");
    if (auto s = checkPathSegments(what, ns, ""); !s.isOk()) return s;
    observeWrite("create", type, "");
    return call("POST", type.path(ns), object_json, "application/json", what);
  }

  StatusOr<rapidjson::Document> update(const ResourceType& type, const std::string& ns,
                                       const std::string& name, const std::string& object_json,
                                       const std::string& subresource) override {
    std::string what = describe("update", type, ns, name);
    if (auto s = checkPathSegments(what, ns, name, subresource); !s.isOk()) return s;
    observeWrite("update", type, subresource);
    return call("PUT", type.path(ns, name, subresource), object_json, "application/json", what);
  }

  StatusOr<rapidjson::Document> patch(const ResourceType& type, const std::string& ns,
                                      const std::string& name, PatchType patch_type,
                                      const std::string& patch_json,
                                      const std::string& subresource) override {
    const char* content_type = patch_type == PatchType::kMerge ? "application/merge-patch+json"
                               : patch_type == PatchType::kJson
                                   ? "application/json-patch+json"
                                   : "application/strategic-merge-patch+json";
    std::string what = describe("patch", type, ns, name);
    if (auto s = checkPathSegments(what, ns, name, subresource); !s.isOk()) return s;
    observeWrite("patch", type, subresource);
    return call("PATCH", type.path(ns, name, subresource), patch_json, content_type, what);
  }

  StatusOr<rapidjson::Document> apply(const ResourceType& type, const std::string& ns,
                                      const std::string& name, const std::string& object_json,
                                      const ApplyOptions& options) override {
    if (options.field_manager.empty()) {
      return error(Code::kInvalidArgument, "MissingFieldManager",
                   describe("apply", type, ns, name) + ": server-side apply needs a field manager");
    }
    std::string what = describe("apply", type, ns, name);
    if (auto s = checkPathSegments(what, ns, name, options.subresource); !s.isOk()) return s;
    Query q;
    q.add("fieldManager", options.field_manager).add("force", options.force ? "true" : "");
    observeWrite("apply", type, options.subresource);
    return call("PATCH", type.path(ns, name, options.subresource) + q.str(), object_json,
                "application/apply-patch+yaml", what);
  }

  Status remove(const ResourceType& type, const std::string& ns, const std::string& name,
                const DeleteOptions& options) override {
    std::string what = describe("delete", type, ns, name);
    if (auto s = checkPathSegments(what, ns, name); !s.isOk()) return s;
    rapidjson::Document body(rapidjson::kObjectType);
    auto& a = body.GetAllocator();
    body.AddMember("apiVersion", "v1", a);
    body.AddMember("kind", "DeleteOptions", a);
    if (options.grace_period_seconds) {
      body.AddMember("gracePeriodSeconds", *options.grace_period_seconds, a);
    }
    if (!options.propagation_policy.empty()) {
      body.AddMember("propagationPolicy", json::stringValue(options.propagation_policy, a), a);
    }
    if (!options.precondition_uid.empty() || !options.precondition_resource_version.empty()) {
      rapidjson::Value pre(rapidjson::kObjectType);
      if (!options.precondition_uid.empty())
        pre.AddMember("uid", json::stringValue(options.precondition_uid, a), a);
      if (!options.precondition_resource_version.empty()) {
        pre.AddMember("resourceVersion",
                      json::stringValue(options.precondition_resource_version, a), a);
      }
      body.AddMember("preconditions", pre, a);
    }
    observeWrite("delete", type, "");
    auto result =
        call("DELETE", type.path(ns, name), json::serialize(body), "application/json", what);
    return result.ok() ? Status::ok() : result.status();
  }

  Status watch(const ResourceType& type, const std::string& ns, const WatchOptions& options,
               const std::function<bool(WatchEvent&)>& on_event,
               const std::atomic<bool>* cancel) override {
    Query q;
    q.add("watch", "true")
        .add("resourceVersion", options.resource_version)
        .add("labelSelector", options.label_selector)
        .add("fieldSelector", options.field_selector)
        .add("timeoutSeconds", std::to_string(options.timeout_seconds))
        .add("allowWatchBookmarks", options.allow_bookmarks ? "true" : "");
    HttpRequest request;
    request.path = type.path(ns) + q.str();
    // Idle timeout above the server-side bound, so the server, not the client, ends it.
    request.timeout = std::chrono::seconds(options.timeout_seconds + 30);
    std::string what = describe("watch", type, ns, "");
    if (auto s = checkPathSegments(what, ns, ""); !s.isOk()) return s;
    Status stream_error = Status::ok();
    throttle_.wait();
    auto started = std::chrono::steady_clock::now();
    auto response = transport_->stream(
        request,
        [&](std::string_view line) {
          if (line.empty()) return true;
          WatchEvent event;
          rapidjson::Document doc;
          try {
            doc = json::parse(line, "watch event");
          } catch (const sdk::Error& e) {
            stream_error = error(Code::kDataLoss, "InvalidWatchEvent", what + ": " + e.what());
            return false;
          }
          // JSON but no event (a list, a string): FindMember below asserts on a non-object
          // (found by fuzz/watch_stream_fuzz.cc).
          if (!doc.IsObject()) {
            stream_error = error(Code::kDataLoss, "InvalidWatchEvent",
                                 what + ": a line of the stream is not a JSON object");
            return false;
          }
          event.type = json::stringOr(&doc, "type");
          if (auto it = doc.FindMember("object"); it != doc.MemberEnd()) {
            event.object.CopyFrom(it->value, event.object.GetAllocator());
          }
          if (event.type == "ERROR") {
            // A Status object inside the stream, typically 410 Gone for an expired version.
            HttpResponse as_response;
            as_response.status =
                static_cast<int>(json::integer(&event.object, "code").value_or(500));
            as_response.body = json::serialize(event.object);
            stream_error = apiError(as_response, what);
            return false;
          }
          return on_event(event);
        },
        cancel);
    observeRequest("GET", response.ok() ? response->status : 0, transport_->host(), started,
                   /*watch=*/true);
    if (!response.ok()) return response.status();
    if (response->status < 200 || response->status >= 300) return apiError(*response, what);
    return stream_error;
  }

 private:
  StatusOr<rapidjson::Document> call(const char* method, const std::string& path,
                                     const std::string& body, const std::string& content_type,
                                     const std::string& what) {
    auto response = send(method, path, body, content_type, what);
    if (!response.ok()) return response.status();
    try {
      return json::parse(
          response->body.empty() ? std::string_view("{}") : std::string_view(response->body),
          what + " response");
    } catch (const sdk::Error& e) {
      return error(Code::kDataLoss, "InvalidResponse", e.what());
    }
  }

  // One request, throttled and bounded by the caller's deadline; a non-2xx answer is the
  // apiserver's error.
  StatusOr<HttpResponse> send(const char* method, const std::string& path, const std::string& body,
                              const std::string& content_type, const std::string& what) {
    HttpRequest request;
    request.method = method;
    request.path = path;
    request.body = body;
    if (!content_type.empty()) request.headers.emplace_back("Content-Type", content_type);
    throttle_.wait();
    if (auto deadline = RequestDeadline::current();
        deadline != std::chrono::steady_clock::time_point::max()) {
      auto left = std::chrono::duration_cast<std::chrono::milliseconds>(
          deadline - std::chrono::steady_clock::now());
      if (left.count() <= 0) {
        return error(Code::kDeadlineExceeded, "Timeout", what + ": the caller's deadline passed");
      }
      request.timeout = std::min(
          request.timeout,
          std::max<std::chrono::milliseconds>(
              std::chrono::seconds(1), std::chrono::duration_cast<std::chrono::seconds>(left)));
    }
    auto started = std::chrono::steady_clock::now();
    auto response = transport_->send(request);
    observeRequest(method, response.ok() ? response->status : 0, transport_->host(), started);
    if (!response.ok()) return response.status();
    if (response->status < 200 || response->status >= 300) return apiError(*response, what);
    return response;
  }

  std::unique_ptr<HttpTransport> transport_;
  RequestThrottle throttle_;
};

thread_local std::chrono::steady_clock::time_point t_request_deadline =
    std::chrono::steady_clock::time_point::max();

}  // namespace

RequestDeadline::RequestDeadline(std::chrono::milliseconds budget) : previous_(t_request_deadline) {
  t_request_deadline = std::min(previous_, std::chrono::steady_clock::now() + budget);
}

RequestDeadline::~RequestDeadline() {
  t_request_deadline = previous_;
}

std::chrono::steady_clock::time_point RequestDeadline::current() {
  return t_request_deadline;
}

std::string groupVersionPath(const std::string& group, const std::string& version) {
  return group.empty() ? "/api/" + sdk::pathSegment(version)
                       : "/apis/" + sdk::pathSegment(group) + "/" + sdk::pathSegment(version);
}

std::string ResourceType::path(const std::string& ns, const std::string& name,
                               const std::string& subresource) const {
  std::string p = groupVersionPath(group, version);
  if (namespaced && !ns.empty()) p += "/namespaces/" + sdk::pathSegment(ns);
  p += "/" + sdk::pathSegment(plural);
  if (!name.empty()) p += "/" + sdk::pathSegment(name);
  if (!name.empty() && !subresource.empty()) p += "/" + sdk::pathSegment(subresource);
  return p;
}

std::unique_ptr<KubeClient> makeKubeClient(std::unique_ptr<HttpTransport> transport,
                                           ClientOptions options) {
  return std::make_unique<HttpKubeClient>(std::move(transport), options);
}

}  // namespace banlieue::kube
