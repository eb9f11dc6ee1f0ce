// A request to the health and metrics endpoints as the server reads it: Beast's request parser
// with the limits the session uses, then the routing (runtime::routeHealthRequest). Any bytes
// must give a request, a parse error or a need for more bytes, never a crash. Property: only
// GET and HEAD reach a check or the metrics.
#include "host/runtime/health_server.h"

#include <boost/asio/buffer.hpp>
#include <boost/beast/core/error.hpp>
#include <boost/beast/http/parser.hpp>
#include <boost/beast/http/string_body.hpp>

#include <cstdint>
#include <cstdlib>
#include <string_view>

// NOLINTNEXTLINE(readability-identifier-naming): libFuzzer's entry point
extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  namespace http = boost::beast::http;
  http::request_parser<http::string_body> parser;
  boost::beast::error_code ec;
  size_t used = 0;
  // Fed in two pieces, as bytes arrive from a socket.
  size_t split = size / 2;
  used += parser.put(boost::asio::buffer(data, split), ec);
  if ((!ec || ec == http::error::need_more) && !parser.is_done()) {
    ec = {};
    used += parser.put(boost::asio::buffer(data + used, size - used), ec);
  }
  if (!parser.is_header_done()) return 0;
  const auto& request = parser.get();
  bool get_or_head = request.method() == http::verb::get || request.method() == http::verb::head;
  auto target = request.target();
  auto route = banlieue::runtime::routeHealthRequest(
      get_or_head, std::string_view(target.data(), target.size()));
  using Endpoint = banlieue::runtime::HealthRoute::Endpoint;
  if (!get_or_head && route.endpoint != Endpoint::kMethodNotAllowed) std::abort();
  return 0;
}
