// Metrics stay inside the pod unless the manifests say otherwise (issue #25, "metrics and
// health"): /metrics listens on loopback by default, on a port of its own; the health port,
// which the kubelet probes on the pod's IP, serves /healthz and /readyz only; the generated
// Deployments (bootstrap's roles, the operator's provider workloads) write the choice out.
#include "host/roles/bootstrap/manifests.h"
#include "host/roles/common/role_process.h"
#include "host/runtime/health_server.h"
#include "tests/support/free_port.h"

#include <banlieue/sdk/json.h>

#include <gmock/gmock.h>
#include <gtest/gtest.h>
#include <boost/asio/connect.hpp>
#include <boost/asio/ip/tcp.hpp>
#include <boost/beast/core.hpp>
#include <boost/beast/http.hpp>

namespace banlieue {
namespace {

namespace beast = boost::beast;
namespace http = beast::http;
namespace json = sdk::json;
using ::testing::HasSubstr;

// The answer's status, or -1 when nothing listens at `address:port`.
int status(const std::string& address, int port, const std::string& target) {
  boost::asio::io_context io;
  boost::asio::ip::tcp::socket socket(io);
  boost::system::error_code ec;
  socket.connect({boost::asio::ip::make_address(address), static_cast<unsigned short>(port)}, ec);
  if (ec) return -1;
  http::request<http::empty_body> request(http::verb::get, target, 11);
  request.set(http::field::host, address);
  http::write(socket, request);
  beast::flat_buffer buffer;
  http::response<http::string_body> response;
  http::read(socket, buffer, response);
  return static_cast<int>(response.result_int());
}

TEST(MetricsExposureTest, MetricsListenOnLoopbackOnlyAndNotOnTheHealthPort) {
  roles::RoleProcessOptions options;
  EXPECT_EQ(options.metrics_bind_address, "127.0.0.1");
  EXPECT_EQ(options.bind_address, "0.0.0.0");
  options.health_port = testing::freePort("127.0.0.1");
  options.metrics_port = testing::freePort("127.0.0.1");
  ASSERT_GT(options.health_port, 0);
  ASSERT_GT(options.metrics_port, 0);
  ASSERT_NE(options.health_port, options.metrics_port);
  runtime::HealthServer health;
  roles::RoleEndpoints endpoints;
  ASSERT_TRUE(endpoints.start(options, health).isOk());

  EXPECT_EQ(status("127.0.0.1", options.metrics_port, "/metrics"), 200);
  // Another address of this machine (127.0.0.2 is loopback too, but not the bound one): the
  // metrics listener is not there, while the health listener, on every address, is.
  EXPECT_EQ(status("127.0.0.2", options.metrics_port, "/metrics"), -1);
  EXPECT_EQ(status("127.0.0.2", options.health_port, "/healthz"), 200);
  EXPECT_EQ(status("127.0.0.1", options.health_port, "/metrics"), 404);
}

TEST(MetricsExposureTest, OnePortForBothServesMetricsOnTheHealthAddress) {
  roles::RoleProcessOptions options;
  options.bind_address = "127.0.0.1";
  options.health_port = testing::freePort("127.0.0.1");
  options.metrics_port = options.health_port;
  runtime::HealthServer health;
  roles::RoleEndpoints endpoints;
  ASSERT_TRUE(endpoints.start(options, health).isOk());
  EXPECT_EQ(status("127.0.0.1", options.health_port, "/metrics"), 200);
}

TEST(MetricsExposureTest, BootstrapDeploymentsWriteTheMetricsAddressOut) {
  roles::bootstrap::BootstrapOptions options;
  int deployments = 0;
  for (const auto& object : roles::bootstrap::buildBootstrapObjects(options, {})) {
    if (json::stringOr(&object, "kind") != "Deployment") continue;
    ++deployments;
    const auto& args = (*json::find(&object, "spec.template.spec.containers"))[0]["args"];
    std::string joined;
    for (const auto& arg : args.GetArray()) joined += std::string(arg.GetString()) + " ";
    EXPECT_THAT(joined, HasSubstr("--metrics-bind-address 127.0.0.1 "))
        << json::stringOr(&object, "metadata.name");
  }
  EXPECT_EQ(deployments, 3);  // controller, operator, imagebuilder
}

}  // namespace
}  // namespace banlieue
