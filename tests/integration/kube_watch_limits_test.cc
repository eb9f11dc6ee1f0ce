// A watch stream that never ends its line (a broken proxy, a hostile endpoint) is cut at a
// bound with a specific error instead of growing the client's memory without limit (issue #25,
// item 7). The server is a local Python process on loopback. Label `security`.
#include "host/kube/config.h"
#include "host/kube/http_transport.h"
#include "tests/support/background_process.h"
#include "tests/support/free_port.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>
#include <netinet/in.h>
#include <sys/socket.h>
#include <unistd.h>

#include <chrono>
#include <thread>

namespace banlieue::kube {
namespace {

TEST(KubeWatchLimitsTest, ALineWithoutEndIsCutAtTheBound) {
  const int port = testing::freePort();
  // 40 MiB of one line, in 1 MiB chunks, then the connection stays open.
  const std::string server =
      "import http.server, time\n"
      "class H(http.server.BaseHTTPRequestHandler):\n"
      "  protocol_version = 'HTTP/1.1'\n"
      "  def log_message(self, *a): pass\n"
      "  def do_GET(self):\n"
      "    self.send_response(200)\n"
      "    self.send_header('Content-Type', 'application/json')\n"
      "    self.send_header('Transfer-Encoding', 'chunked')\n"
      "    self.end_headers()\n"
      "    chunk = b'x' * (1 << 20)\n"
      "    try:\n"
      "      for _ in range(40):\n"
      "        self.wfile.write(b'%x\\r\\n' % len(chunk) + chunk + b'\\r\\n'); self.wfile.flush()\n"
      "      time.sleep(30)\n"
      "    except Exception: pass\n"
      "http.server.HTTPServer(('127.0.0.1', " +
      std::to_string(port) + "), H).serve_forever()\n";
  testing::BackgroundProcess python({"/usr/bin/python3", "-c", server});
  Connection connection;
  connection.server = "http://127.0.0.1:" + std::to_string(port);
  auto transport = makeHttpTransport(connection);
  ASSERT_TRUE(transport.ok()) << transport.status().message();
  HttpRequest request;
  request.method = "GET";
  request.path = "/api/v1/namespaces?watch=1";
  request.timeout = std::chrono::seconds(60);
  StatusOr<HttpResponse> response = Status(Code::kUnavailable, "NotTried", "");
  for (int attempt = 0; attempt < 50; ++attempt) {  // until the server listens
    int lines = 0;
    response = (*transport)
                   ->stream(
                       request, [&](std::string_view) { return ++lines < 100; }, nullptr);
    if (response.ok() || response.status().reason() != "ConnectionFailed") break;
    std::this_thread::sleep_for(std::chrono::milliseconds(100));
  }
  ASSERT_FALSE(response.ok());
  EXPECT_EQ(response.status().reason(), "WatchLineTooLong") << response.status().message();
}

}  // namespace
}  // namespace banlieue::kube
