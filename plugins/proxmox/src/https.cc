// HttpTransport over Boost.Beast. Every request opens its own TLS connection on its own
// io_context (ADR 0009): calls of one Provider run concurrently without sharing a socket, and
// each step runs asynchronously under the request's deadline so a stalled node cannot hold a
// call past it. The cost, a handshake per request, is small next to PVE's task durations.
#include "plugins/proxmox/src/https.h"

#include <openssl/ssl.h>
#include <boost/asio/connect.hpp>
#include <boost/asio/ip/tcp.hpp>
#include <boost/asio/ssl.hpp>
#include <boost/beast/core.hpp>
#include <boost/beast/http.hpp>
#include <boost/beast/ssl.hpp>

namespace banlieue::proxmox {
namespace {

namespace asio = boost::asio;
namespace beast = boost::beast;
namespace http = beast::http;
namespace ssl = asio::ssl;
using tcp = asio::ip::tcp;

constexpr uint64_t kMaxResponseBytes = 32ull << 20;  // /cluster/resources of a large cluster

class BeastHttps final : public HttpTransport {
 public:
  BeastHttps(Endpoint endpoint, const TlsOptions& tls)
      : endpoint_(std::move(endpoint)), context_(ssl::context::tls_client) {
    context_.set_options(ssl::context::default_workarounds | ssl::context::no_sslv2 |
                         ssl::context::no_sslv3 | ssl::context::no_tlsv1 |
                         ssl::context::no_tlsv1_1);
    verify_ = !tls.insecure_skip_verify;
    if (!verify_) {
      context_.set_verify_mode(ssl::verify_none);
      return;
    }
    context_.set_verify_mode(ssl::verify_peer);
    if (tls.ca_bundle_pem.empty()) {
      context_.set_default_verify_paths();
      return;
    }
    beast::error_code ec;
    context_.add_certificate_authority(asio::buffer(tls.ca_bundle_pem), ec);
    if (ec) throw std::invalid_argument("caBundle is not a PEM certificate: " + ec.message());
  }

  HttpResponse send(const HttpRequest& request, std::chrono::milliseconds timeout) override {
    asio::io_context io;
    const auto deadline = std::chrono::steady_clock::now() + timeout;
    auto run = [&io](auto&& start) {
      beast::error_code result = asio::error::would_block;
      start([&result](beast::error_code ec, auto&&...) { result = ec; });
      io.restart();
      io.run();
      return result;
    };
    auto fail = [this](TransportError::Kind kind, const std::string& step,
                       const beast::error_code& ec) -> TransportError {
      if (ec == beast::error::timeout) {
        return {TransportError::Kind::kTimeout, step + " " + endpoint_.origin() + " timed out"};
      }
      return {kind, step + " " + endpoint_.origin() + ": " + ec.message()};
    };

    tcp::resolver resolver(io);
    beast::error_code ec;
    auto endpoints = resolver.resolve(endpoint_.host, endpoint_.port, ec);
    if (ec) throw fail(TransportError::Kind::kConnect, "resolving", ec);
    beast::ssl_stream<beast::tcp_stream> stream(io, context_);
    auto& tcp_stream = beast::get_lowest_layer(stream);
    tcp_stream.expires_at(deadline);
    ec = run([&](auto handler) { tcp_stream.async_connect(endpoints, std::move(handler)); });
    if (ec) throw fail(TransportError::Kind::kConnect, "connecting to", ec);

    beast::error_code parse_ec;
    (void)asio::ip::make_address(endpoint_.host, parse_ec);
    if (parse_ec) SSL_set_tlsext_host_name(stream.native_handle(), endpoint_.host.c_str());
    if (verify_) stream.set_verify_callback(ssl::host_name_verification(endpoint_.host));
    ec = run([&](auto handler) {
      stream.async_handshake(ssl::stream_base::client, std::move(handler));
    });
    if (ec) throw fail(TransportError::Kind::kTls, "TLS handshake with", ec);

    http::request<http::string_body> message;
    message.method_string(request.method);
    message.target(request.target);
    message.version(11);
    message.set(http::field::host, endpoint_.host + ":" + endpoint_.port);
    message.set(http::field::user_agent, "banlieue-provider-proxmox");
    message.keep_alive(false);
    for (const auto& [name, value] : request.headers) message.set(name, value);
    if (!request.body.empty()) {
      message.set(http::field::content_type, "application/x-www-form-urlencoded");
      message.body() = request.body;
    }
    message.prepare_payload();
    ec = run([&](auto handler) { http::async_write(stream, message, std::move(handler)); });
    if (ec) throw fail(TransportError::Kind::kIo, "sending to", ec);

    beast::flat_buffer buffer;
    http::response_parser<http::string_body> parser;
    parser.body_limit(kMaxResponseBytes);
    ec = run([&](auto handler) { http::async_read(stream, buffer, parser, std::move(handler)); });
    if (ec) throw fail(TransportError::Kind::kIo, "reading the response from", ec);
    auto& response = parser.get();
    HttpResponse out;
    out.status = static_cast<int>(response.result_int());
    out.reason = std::string(response.reason());
    out.body = std::move(response.body());
    beast::error_code ignored;
    tcp_stream.socket().shutdown(tcp::socket::shutdown_both, ignored);
    return out;
  }

 private:
  Endpoint endpoint_;
  ssl::context context_;  // read-only after construction, so shared by concurrent sends
  bool verify_ = true;
};

}  // namespace

Endpoint Endpoint::parse(const std::string& url) {
  const std::string scheme = "https://";
  if (url.rfind(scheme, 0) != 0) {
    throw std::invalid_argument("'" + url + "' must start with https:// (PVE serves only HTTPS)");
  }
  std::string rest = url.substr(scheme.size());
  rest = rest.substr(0, rest.find_first_of("/?#"));
  if (rest.find('@') != std::string::npos) {
    throw std::invalid_argument("'" + url + "' must not carry credentials");
  }
  Endpoint e;
  e.port = "8006";
  if (!rest.empty() && rest.front() == '[') {  // [v6]:port
    auto close = rest.find(']');
    if (close == std::string::npos) throw std::invalid_argument("'" + url + "': unclosed '['");
    e.host = rest.substr(1, close - 1);
    if (close + 1 < rest.size() && rest[close + 1] == ':') e.port = rest.substr(close + 2);
  } else if (auto colon = rest.find(':'); colon != std::string::npos) {
    e.host = rest.substr(0, colon);
    e.port = rest.substr(colon + 1);
  } else {
    e.host = rest;
  }
  if (e.host.empty()) throw std::invalid_argument("'" + url + "' names no host");
  if (e.port.empty() || e.port.find_first_not_of("0123456789") != std::string::npos) {
    throw std::invalid_argument("'" + url + "' has an invalid port");
  }
  return e;
}

std::unique_ptr<HttpTransport> makeHttpsTransport(const Endpoint& endpoint, const TlsOptions& tls) {
  return std::make_unique<BeastHttps>(endpoint, tls);
}

}  // namespace banlieue::proxmox
