// The client against a scripted transport: what goes on the wire and how answers and errors
// come back.
#include "host/common/metrics.h"
#include "host/kube/api_error.h"
#include "host/kube/client.h"

#include <banlieue/sdk/uri.h>

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <deque>
#include <future>
#include <mutex>

namespace banlieue::kube {
namespace {

using ::testing::HasSubstr;

class ScriptedTransport final : public HttpTransport {
 public:
  std::deque<HttpResponse> responses;
  std::vector<HttpRequest> requests;
  std::vector<std::string> stream_lines;

  std::function<void()> on_send;  // called for each request, from the sending thread

  StatusOr<HttpResponse> send(const HttpRequest& request) override {
    if (on_send) on_send();
    requests.push_back(request);
    if (responses.empty())
      return error(Code::kUnavailable, "ConnectionFailed", "no scripted response");
    auto r = responses.front();
    responses.pop_front();
    return r;
  }
  StatusOr<HttpResponse> stream(const HttpRequest& request,
                                const std::function<bool(std::string_view)>& on_line,
                                const std::atomic<bool>*) override {
    requests.push_back(request);
    for (const auto& line : stream_lines) {
      if (!on_line(line)) break;
    }
    return HttpResponse{200, {}, {}};
  }
};

struct Fixture {
  ScriptedTransport* transport;
  std::unique_ptr<KubeClient> client;
};

Fixture make() {
  auto t = std::make_unique<ScriptedTransport>();
  auto* raw = t.get();
  return {raw, makeKubeClient(std::move(t))};
}

std::string header(const HttpRequest& r, const std::string& name) {
  for (const auto& [k, v] : r.headers) {
    if (k == name) return v;
  }
  return {};
}

TEST(ResourceTypeTest, PathsForCoreGroupsClusterScopeAndSubresources) {
  EXPECT_EQ(resources::kConfigMap.path("ns", "x"), "/api/v1/namespaces/ns/configmaps/x");
  EXPECT_EQ(resources::kLease.path("ns"), "/apis/coordination.k8s.io/v1/namespaces/ns/leases");
  EXPECT_EQ(resources::kNamespace.path("ignored", "team-a"), "/api/v1/namespaces/team-a");
  EXPECT_EQ(resources::kDeployment.path("ns", "d", "status"),
            "/apis/apps/v1/namespaces/ns/deployments/d/status");
  EXPECT_EQ(sdk::percentEncode("app in (a,b)"), "app%20in%20%28a%2Cb%29");
}

TEST(KubeClientTest, ServerSideApplySendsApplyPatchWithManagerAndForce) {
  auto f = make();
  f.transport->responses.push_back({200, {}, R"({"kind":"ConfigMap","metadata":{"name":"x"}})"});
  auto applied =
      f.client->apply(resources::kConfigMap, "ns", "x", R"({"apiVersion":"v1","kind":"ConfigMap"})",
                      {.field_manager = "banlieue.io/controller", .force = true});
  ASSERT_TRUE(applied.ok()) << applied.status().message();
  const auto& r = f.transport->requests.at(0);
  EXPECT_EQ(r.method, "PATCH");
  EXPECT_EQ(r.path,
            "/api/v1/namespaces/ns/configmaps/x?fieldManager=banlieue.io%2Fcontroller&force=true");
  EXPECT_EQ(header(r, "Content-Type"), "application/apply-patch+yaml");
  EXPECT_EQ(f.client->apply(resources::kConfigMap, "ns", "x", "{}", {}).status().reason(),
            "MissingFieldManager");
}

TEST(KubeClientTest, StatusObjectsBecomeTypedErrors) {
  auto f = make();
  f.transport->responses.push_back(
      {404,
       {},
       R"({"kind":"Status","status":"Failure","message":"configmaps \"x\" not found","reason":"NotFound","code":404})"});
  auto missing = f.client->get(resources::kConfigMap, "ns", "x");
  ASSERT_FALSE(missing.ok());
  EXPECT_TRUE(isNotFound(missing.status()));
  EXPECT_EQ(missing.status().code(), Code::kNotFound);
  EXPECT_THAT(missing.status().message(),
              HasSubstr("get configmaps ns/x: configmaps \"x\" not found"));

  f.transport->responses.push_back({422, {}, R"({"kind":"Status","reason":"Invalid","message":"bad",
    "details":{"causes":[{"field":"spec.replicas","message":"must be >= 0"}]},"code":422})"});
  auto invalid = f.client->create(resources::kDeployment, "ns", "{}");
  EXPECT_TRUE(isInvalid(invalid.status()));
  EXPECT_THAT(invalid.status().message(), HasSubstr("spec.replicas: must be >= 0"));

  f.transport->responses.push_back(
      {409, {}, R"({"kind":"Status","reason":"AlreadyExists","code":409})"});
  EXPECT_EQ(f.client->create(resources::kConfigMap, "ns", "{}").status().code(),
            Code::kAlreadyExists);

  f.transport->responses.push_back(
      {429, {{"retry-after", "3"}}, R"({"kind":"Status","reason":"TooManyRequests"})"});
  auto throttled = f.client->list(resources::kPod, "ns");
  EXPECT_EQ(throttled.status().code(), Code::kResourceExhausted);
  EXPECT_THAT(throttled.status().message(), HasSubstr("retry after 3 s"));

  f.transport->responses.push_back({502, {}, "<html>bad gateway</html>"});
  EXPECT_EQ(f.client->list(resources::kPod, "ns").status().code(), Code::kUnavailable);
}

TEST(KubeClientTest, DeleteSendsPropagationAndPreconditions) {
  auto f = make();
  f.transport->responses.push_back({200, {}, R"({"kind":"Status","status":"Success"})"});
  auto st = f.client->remove(resources::kConfigMap, "ns", "x",
                             {.propagation_policy = "Foreground", .precondition_uid = "u-1"});
  EXPECT_TRUE(st.isOk()) << st.message();
  const auto& r = f.transport->requests.at(0);
  EXPECT_EQ(r.method, "DELETE");
  EXPECT_THAT(r.body, HasSubstr(R"("propagationPolicy":"Foreground")"));
  EXPECT_THAT(r.body, HasSubstr(R"("preconditions":{"uid":"u-1"})"));
}

TEST(KubeClientTest, WatchParsesEventsAndTurnsAnErrorEventIntoGone) {
  auto f = make();
  f.transport->stream_lines = {
      R"({"type":"ADDED","object":{"metadata":{"name":"a","resourceVersion":"5"}}})",
      R"({"type":"BOOKMARK","object":{"metadata":{"resourceVersion":"9"}}})",
      R"json({"type":"ERROR","object":{"kind":"Status","reason":"Expired","message":"too old resource version: 1 (9)",
    "code" : 410
  }
})json",
  };
  std::vector<std::string> seen;
  auto st =
      f.client->watch(resources::kConfigMap, "ns", {.resource_version = "4"}, [&](WatchEvent& e) {
        seen.push_back(e.type + ":" +
                       std::string(e.object["metadata"]["resourceVersion"].GetString()));
        return true;
      });
  EXPECT_THAT(seen, ::testing::ElementsAre("ADDED:5", "BOOKMARK:9"));
  EXPECT_TRUE(isGone(st)) << st.reason() << " " << st.message();
  const auto& r = f.transport->requests.at(0);
  EXPECT_THAT(r.path, HasSubstr("watch=true&resourceVersion=4"));
  EXPECT_THAT(r.path, HasSubstr("allowWatchBookmarks=true"));
  EXPECT_GT(r.timeout, std::chrono::seconds(240))
      << "client idle timeout above the server's timeoutSeconds";
}

// On a fake clock: the burst goes out at once, the next request waits exactly for its token
// (1/qps of clock time) however slowly the machine runs.
TEST(KubeClientTest, RequestsBeyondTheBurstWaitForTheirTokenAndAreCounted) {
  const ClientOptions options{/*qps=*/50, /*burst=*/2};
  const auto token_interval = std::chrono::duration_cast<std::chrono::nanoseconds>(
      std::chrono::duration<double>(1.0 / options.qps));
  common::FakeClock clock;
  auto t = std::make_unique<ScriptedTransport>();
  auto* transport = t.get();
  for (int i = 0; i < 3; ++i) transport->responses.push_back({200, {}, "{}"});
  std::mutex sent_mutex;
  size_t sent = 0;
  transport->on_send = [&] {
    std::lock_guard lock(sent_mutex);
    ++sent;
  };
  auto sentSoFar = [&] {
    std::lock_guard lock(sent_mutex);
    return sent;
  };
  ClientOptions with_clock = options;
  with_clock.clock = &clock;
  auto client = makeKubeClient(std::move(t), with_clock);
  auto& throttled =
      MetricsRegistry::global().counter("banlieue_kube_client_throttled_total",
                                        "Requests delayed by the client-side QPS/burst limit");
  auto& ok_gets = MetricsRegistry::global().counter(
      "rest_client_requests_total",
      "Number of HTTP requests, partitioned by status code, method, and host.",
      {{"code", "200"}, {"method", "GET"}, {"host", ""}});
  const double throttled_before = throttled.value();
  const double gets_before = ok_gets.value();
  for (int i = 0; i < options.burst; ++i) {
    ASSERT_TRUE(client->get(resources::kConfigMap, "a", "b").ok());
  }
  EXPECT_EQ(throttled.value(), throttled_before) << "the burst is not throttled";

  auto third = std::async(std::launch::async,
                          [&] { return client->get(resources::kConfigMap, "a", "b").ok(); });
  // The positive signal that it is waiting: it was counted as throttled.
  const auto patience = std::chrono::steady_clock::now() + std::chrono::seconds(30);
  while (throttled.value() == throttled_before && std::chrono::steady_clock::now() < patience) {
    third.wait_for(std::chrono::milliseconds(1));
  }
  ASSERT_EQ(throttled.value(), throttled_before + 1) << "the request after the burst waits";
  clock.advance(token_interval / 2);
  EXPECT_EQ(sentSoFar(), static_cast<size_t>(options.burst)) << "sent before its token";
  clock.advance(token_interval - token_interval / 2);
  ASSERT_EQ(third.wait_for(std::chrono::seconds(30)), std::future_status::ready);
  EXPECT_TRUE(third.get());
  EXPECT_EQ(sentSoFar(), static_cast<size_t>(options.burst) + 1);
  EXPECT_EQ(ok_gets.value(), gets_before + options.burst + 1);
}

TEST(KubeClientTest, WritesAreCountedByVerbResourceAndSubresourceReadsAreNot) {
  auto f = make();
  for (int i = 0; i < 6; ++i) f.transport->responses.push_back({200, {}, "{}"});
  auto writes = [](const std::string& verb, const std::string& group, const std::string& resource,
                   const std::string& subresource) {
    return MetricsRegistry::global()
        .counter("banlieue_kube_write_requests_total",
                 "Kubernetes API write requests by verb, API group, resource and subresource",
                 {{"verb", verb},
                  {"group", group},
                  {"resource", resource},
                  {"subresource", subresource}})
        .value();
  };
  const ResourceType vms{"banlieue.io", "v1alpha1", "virtualmachines", true};
  double status_applies = writes("apply", "banlieue.io", "virtualmachines", "status");
  double spec_applies = writes("apply", "banlieue.io", "virtualmachines", "");
  double creates = writes("create", "core", "configmaps", "");
  double lease_updates = writes("update", "coordination.k8s.io", "leases", "");
  double deletes = writes("delete", "core", "configmaps", "");

  ASSERT_TRUE(f.client->get(vms, "a", "b").ok());
  ASSERT_TRUE(
      f.client->apply(vms, "a", "b", "{}", {.field_manager = "m", .subresource = "status"}).ok());
  ASSERT_TRUE(f.client->create(resources::kConfigMap, "a", "{}").ok());
  ASSERT_TRUE(f.client->update(resources::kLease, "a", "l", "{}", "").ok());
  ASSERT_TRUE(f.client->remove(resources::kConfigMap, "a", "c", {}).isOk());

  EXPECT_EQ(writes("apply", "banlieue.io", "virtualmachines", "status"), status_applies + 1);
  EXPECT_EQ(writes("apply", "banlieue.io", "virtualmachines", ""), spec_applies)
      << "a status apply is not a spec apply";
  EXPECT_EQ(writes("create", "core", "configmaps", ""), creates + 1);
  EXPECT_EQ(writes("update", "coordination.k8s.io", "leases", ""), lease_updates + 1);
  EXPECT_EQ(writes("delete", "core", "configmaps", ""), deletes + 1);
  EXPECT_THAT(MetricsRegistry::global().render(),
              HasSubstr("banlieue_kube_write_requests_total{verb=\"apply\",group=\"banlieue.io\","
                        "resource=\"virtualmachines\",subresource=\"status\"}"));
}

}  // namespace
}  // namespace banlieue::kube
