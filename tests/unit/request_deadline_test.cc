// kube::RequestDeadline: a caller's deadline bounds the requests it makes through the real
// client (the transport's timeout), and a passed deadline fails without sending.
#include "host/kube/client.h"

#include <gtest/gtest.h>

#include <vector>

namespace banlieue::kube {
namespace {

using namespace std::chrono_literals;

class RecordingTransport final : public HttpTransport {
 public:
  std::vector<HttpRequest> requests;
  StatusOr<HttpResponse> send(const HttpRequest& request) override {
    requests.push_back(request);
    return HttpResponse{200, {}, "{}"};
  }
  StatusOr<HttpResponse> stream(const HttpRequest& request,
                                const std::function<bool(std::string_view)>&,
                                const std::atomic<bool>*) override {
    requests.push_back(request);
    return HttpResponse{200, {}, {}};
  }
};

TEST(RequestDeadlineTest, BoundsTheTransportTimeoutOfRequestsInItsScope) {
  auto owned = std::make_unique<RecordingTransport>();
  auto* transport = owned.get();
  auto client = makeKubeClient(std::move(owned));
  (void)client->get(resources::kLease, "ns", "lease");
  {
    RequestDeadline outer(8s);
    RequestDeadline inner(3500ms);
    (void)client->get(resources::kLease, "ns", "lease");
  }
  (void)client->get(resources::kLease, "ns", "lease");
  ASSERT_EQ(transport->requests.size(), 3U);
  EXPECT_EQ(transport->requests[0].timeout, 30s);
  EXPECT_LE(transport->requests[1].timeout, 3500ms);
  EXPECT_GE(transport->requests[1].timeout, 1s);
  EXPECT_EQ(transport->requests[2].timeout, 30s) << "the scope ended";
}

TEST(RequestDeadlineTest, APassedDeadlineFailsWithoutSending) {
  auto owned = std::make_unique<RecordingTransport>();
  auto* transport = owned.get();
  auto client = makeKubeClient(std::move(owned), ClientOptions{.qps = 0});
  RequestDeadline passed(-1ms);
  auto r = client->update(resources::kLease, "ns", "lease", "{}");
  ASSERT_FALSE(r.ok());
  EXPECT_EQ(r.status().code(), Code::kDeadlineExceeded);
  EXPECT_TRUE(transport->requests.empty());
}

}  // namespace
}  // namespace banlieue::kube
