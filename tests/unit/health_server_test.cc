#include "host/runtime/health_server.h"

#include "host/common/metrics.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>
#include <boost/asio/connect.hpp>
#include <boost/asio/ip/tcp.hpp>
#include <boost/beast/core.hpp>
#include <boost/beast/http.hpp>

#include <atomic>

namespace banlieue::runtime {
namespace {

namespace beast = boost::beast;
namespace http = beast::http;
using ::testing::HasSubstr;

struct Answer {
  int status = 0;
  std::string body;
};

Answer get(int port, const std::string& target) {
  boost::asio::io_context io;
  boost::asio::ip::tcp::socket socket(io);
  socket.connect({boost::asio::ip::make_address("127.0.0.1"), static_cast<unsigned short>(port)});
  http::request<http::empty_body> request(http::verb::get, target, 11);
  request.set(http::field::host, "127.0.0.1");
  http::write(socket, request);
  beast::flat_buffer buffer;
  http::response<http::string_body> response;
  http::read(socket, buffer, response);
  return {static_cast<int>(response.result_int()), response.body()};
}

TEST(HealthServerTest, ReadyzFollowsItsChecksAndMetricsAreServed) {
  std::atomic<bool> synced{false};
  HealthServer server;
  server.addLivenessCheck("ping", [](std::string&) { return true; });
  server.addReadinessCheck("informers", [&](std::string& reason) {
    if (!synced) reason = "caches not synced";
    return synced.load();
  });
  ASSERT_TRUE(server.start("127.0.0.1", 0).isOk());
  ASSERT_GT(server.port(), 0);

  auto healthz = get(server.port(), "/healthz");
  EXPECT_EQ(healthz.status, 200);
  EXPECT_EQ(healthz.body, "ok");

  auto not_ready = get(server.port(), "/readyz");
  EXPECT_EQ(not_ready.status, 500);
  EXPECT_THAT(not_ready.body, HasSubstr("[-]informers failed: caches not synced"));

  synced = true;
  EXPECT_EQ(get(server.port(), "/readyz").status, 200);
  auto verbose = get(server.port(), "/readyz?verbose");
  EXPECT_THAT(verbose.body, HasSubstr("[+]informers ok"));

  MetricsRegistry::global().counter("health_server_test_total", "test").inc();
  auto metrics = get(server.port(), "/metrics");
  EXPECT_EQ(metrics.status, 200);
  EXPECT_THAT(metrics.body, HasSubstr("health_server_test_total 1"));

  EXPECT_EQ(get(server.port(), "/nope").status, 404);
  server.stop();
}

TEST(HealthServerTest, AThrowingCheckFailsWithItsMessage) {
  HealthServer server;
  server.addReadinessCheck("leader",
                           [](std::string&) -> bool { throw std::runtime_error("boom"); });
  ASSERT_TRUE(server.start("127.0.0.1", 0).isOk());
  auto answer = get(server.port(), "/readyz");
  EXPECT_EQ(answer.status, 500);
  EXPECT_THAT(answer.body, HasSubstr("[-]leader failed: boom"));
}

TEST(HealthServerTest, ABusyPortIsAClearError) {
  HealthServer first;
  ASSERT_TRUE(first.start("127.0.0.1", 0).isOk());
  HealthServer second;
  auto s = second.start("127.0.0.1", first.port());
  EXPECT_EQ(s.reason(), "BindFailed");
  EXPECT_THAT(s.message(), HasSubstr(std::to_string(first.port())));
}

}  // namespace
}  // namespace banlieue::runtime
