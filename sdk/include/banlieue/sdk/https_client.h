// The HTTPS client plugins share (docs/adr/0029-one-https-client-for-plugins.md): a kept-alive
// Connection for one caller at a time, and a Client for many threads (a connection per
// request). The policy is in banlieue/sdk/https.h. Every step (resolve, connect, the proxy's
// CONNECT tunnel, the TLS handshake, write, read) runs under the request's deadline, so a
// stalled server or proxy cannot hold a call past it.
// Header-only over Boost.Beast and OpenSSL: a plugin that includes it links OpenSSL's libssl and
// libcrypto (CMake: OpenSSL::SSL OpenSSL::Crypto) and needs Boost's headers (1.74 or later).
// Include it from one source file of a plugin, which keeps Beast's compile cost there.
#pragma once

#include <banlieue/sdk/https.h>
#include <banlieue/sdk/proxy.h>
#include <banlieue/sdk/text.h>

#include <openssl/evp.h>
#include <openssl/ssl.h>
#include <boost/asio/connect.hpp>
#include <boost/asio/ip/tcp.hpp>
#include <boost/asio/ssl.hpp>
#include <boost/beast/core.hpp>
#include <boost/beast/http.hpp>
#include <boost/beast/ssl.hpp>

#include <chrono>
#include <cstdint>
#include <memory>
#include <optional>
#include <stdexcept>
#include <string>
#include <string_view>
#include <utility>

namespace banlieue::sdk::https {

namespace detail {

namespace asio = boost::asio;
namespace beast = boost::beast;
namespace http = beast::http;
namespace ssl = asio::ssl;
using tcp = asio::ip::tcp;
using Clock = std::chrono::steady_clock;

inline std::string base64(std::string_view in) {
  std::string out(4 * ((in.size() + 2) / 3), '\0');
  const int n = EVP_EncodeBlock(reinterpret_cast<unsigned char*>(out.data()),
                                reinterpret_cast<const unsigned char*>(in.data()),
                                static_cast<int>(in.size()));
  out.resize(n < 0 ? 0 : static_cast<size_t>(n));
  return out;
}

inline ProxySettings proxySettings(const Options& options) {
  return options.proxy ? *options.proxy : ProxySettings::fromEnvironment();
}

// Throws std::invalid_argument when the CA bundle holds no PEM certificate.
inline std::shared_ptr<ssl::context> makeContext(const TlsOptions& tls) {
  auto context = std::make_shared<ssl::context>(ssl::context::tls_client);
  context->set_options(ssl::context::default_workarounds | ssl::context::no_sslv2 |
                       ssl::context::no_sslv3 | ssl::context::no_tlsv1 | ssl::context::no_tlsv1_1);
  if (tls.insecure_skip_verify) {
    context->set_verify_mode(ssl::verify_none);
    return context;
  }
  context->set_verify_mode(ssl::verify_peer);
  if (tls.ca_bundle_pem.empty()) {
    context->set_default_verify_paths();
  } else {
    beast::error_code ec;
    context->add_certificate_authority(asio::buffer(tls.ca_bundle_pem), ec);
    if (ec) throw std::invalid_argument("caBundle is not a PEM certificate: " + ec.message());
  }
  return context;
}

// The first request on a kept-alive connection the server has meanwhile closed fails before
// the server saw it; only then is sending it again safe for a method that is not idempotent.
struct StaleConnection {};

}  // namespace detail

// One connection to one endpoint, kept alive between requests and reopened when needed. One
// request at a time: a caller that sends from several threads uses a Client, or one
// Connection per thread.
class Connection {
 public:
  // Throws std::invalid_argument when the CA bundle holds no PEM certificate or the proxy
  // settings are malformed.
  Connection(Endpoint endpoint, Options options)
      : endpoint_(std::move(endpoint)),
        options_(std::move(options)),
        context_(detail::makeContext(options_.tls)),
        proxy_(detail::proxySettings(options_).proxyFor(endpoint_.host, endpoint_.port)) {}

  // With a TLS context built by makeContext (a Client shares one among its connections).
  Connection(Endpoint endpoint, std::shared_ptr<detail::ssl::context> context, Options options)
      : endpoint_(std::move(endpoint)),
        options_(std::move(options)),
        context_(std::move(context)),
        proxy_(detail::proxySettings(options_).proxyFor(endpoint_.host, endpoint_.port)) {}

  Connection(const Connection&) = delete;
  Connection& operator=(const Connection&) = delete;
  ~Connection() { reset(); }

  const Endpoint& endpoint() const { return endpoint_; }
  // The proxy this connection goes through, if any.
  const std::optional<Proxy>& proxy() const { return proxy_; }

  // Sends one request (opening the connection when needed) and reads the whole response, all
  // within `timeout`. Throws TransportError; std::invalid_argument when body_file cannot be
  // opened.
  Response send(const Request& request, std::chrono::milliseconds timeout) {
    const auto deadline = detail::Clock::now() + timeout;
    const bool reused = open();
    try {
      if (!reused) connect(deadline);
      return exchange(request, deadline, reused);
    } catch (const detail::StaleConnection&) {
      reset();
      connect(deadline);
      return exchange(request, deadline, false);
    }
  }

  // Opens the connection (through the proxy's tunnel when one applies) without sending
  // anything and hands its TLS stream over, for an upgrade (banlieue/sdk/websocket_client.h).
  // The stream runs on ioContext(), which must outlive it. Throws TransportError;
  // std::invalid_argument for an http:// endpoint (an upgrade is only offered over TLS).
  detail::beast::ssl_stream<detail::beast::tcp_stream> detachTls(
      std::chrono::milliseconds timeout) {
    if (!endpoint_.tls()) {
      throw std::invalid_argument("an upgrade to " + endpoint_.origin() + " needs https");
    }
    reset();
    connect(detail::Clock::now() + timeout);
    auto stream = std::move(*tls_);
    tls_.reset();
    return stream;
  }
  detail::asio::io_context& ioContext() { return io_; }

  // Drops the connection; the next send opens a new one.
  void reset() {
    detail::beast::error_code ignored;
    if (tls_) detail::beast::get_lowest_layer(*tls_).socket().close(ignored);
    if (plain_) plain_->socket().close(ignored);
    tls_.reset();
    plain_.reset();
    buffer_.clear();
  }

 private:
  bool open() const { return tls_.has_value() || plain_.has_value(); }

  template <class Start>
  detail::beast::error_code run(Start&& start) {
    detail::beast::error_code result = detail::asio::error::would_block;
    start([&result](detail::beast::error_code ec, auto&&...) { result = ec; });
    io_.restart();
    io_.run();
    return result;
  }

  std::string via() const { return proxy_ ? " through proxy " + proxy_->origin() : ""; }

  [[noreturn]] void fail(TransportError::Kind kind, const std::string& step,
                         const detail::beast::error_code& ec) {
    reset();
    if (ec == detail::beast::error::timeout) {
      throw TransportError(TransportError::Kind::kTimeout,
                           step + " " + endpoint_.origin() + via() + " timed out");
    }
    throw TransportError(kind, step + " " + endpoint_.origin() + via() + ": " + ec.message());
  }

  void connect(detail::Clock::time_point deadline) {
    using detail::beast::error_code;
    const std::string& host = proxy_ ? proxy_->host : endpoint_.host;
    const std::string& port = proxy_ ? proxy_->port : endpoint_.port;
    detail::tcp::resolver resolver(io_);
    error_code ec;
    auto addresses = resolver.resolve(host, port, ec);
    const auto kind = proxy_ ? TransportError::Kind::kProxy : TransportError::Kind::kConnect;
    if (ec) fail(kind, "resolving", ec);
    detail::beast::tcp_stream stream(io_);
    stream.expires_at(deadline);
    ec = run([&](auto handler) { stream.async_connect(addresses, std::move(handler)); });
    if (ec) {
      error_code ignored;
      stream.socket().close(ignored);
      fail(kind, "connecting to", ec);
    }
    if (proxy_ && endpoint_.tls()) tunnel(stream, deadline);
    if (!endpoint_.tls()) {
      plain_.emplace(std::move(stream));
      return;
    }
    tls_.emplace(std::move(stream), *context_);
    error_code not_an_address;
    (void)detail::asio::ip::make_address(endpoint_.host, not_an_address);
    if (not_an_address) SSL_set_tlsext_host_name(tls_->native_handle(), endpoint_.host.c_str());
    if (SSL_CTX_get_verify_mode(context_->native_handle()) != SSL_VERIFY_NONE) {
      tls_->set_verify_callback(detail::ssl::host_name_verification(endpoint_.host));
    }
    detail::beast::get_lowest_layer(*tls_).expires_at(deadline);
    ec = run([&](auto handler) {
      tls_->async_handshake(detail::ssl::stream_base::client, std::move(handler));
    });
    if (ec) fail(TransportError::Kind::kTls, "TLS handshake with", ec);
  }

  // CONNECT host:port through the proxy; on 2xx the stream carries the tunnel.
  void tunnel(detail::beast::tcp_stream& stream, detail::Clock::time_point deadline) {
    namespace http = detail::http;
    http::request<http::empty_body> connect_request{http::verb::connect, endpoint_.authority(), 11};
    connect_request.set(http::field::host, endpoint_.authority());
    connect_request.set(http::field::user_agent, options_.user_agent);
    addProxyAuthorization(connect_request);
    auto ec =
        run([&](auto handler) { http::async_write(stream, connect_request, std::move(handler)); });
    if (ec) fail(TransportError::Kind::kProxy, "asking the proxy to connect to", ec);
    detail::beast::flat_buffer buffer;
    http::response_parser<http::empty_body> parser;
    parser.skip(true);  // a CONNECT response has no body: the tunnel follows
    ec = run(
        [&](auto handler) { http::async_read_header(stream, buffer, parser, std::move(handler)); });
    if (ec) fail(TransportError::Kind::kProxy, "reading the proxy's answer for", ec);
    const auto status = parser.get().result_int();
    if (status / 100 != 2) {
      detail::beast::error_code ignored;
      stream.socket().close(ignored);
      reset();
      throw TransportError(TransportError::Kind::kProxy,
                           "proxy " + proxy_->origin() + " refused to connect to " +
                               endpoint_.authority() + ": " + std::to_string(status) + " " +
                               std::string(parser.get().reason()));
    }
    if (buffer.size() != 0) {  // bytes after the proxy's answer: not a clean tunnel
      throw TransportError(TransportError::Kind::kProxy, "proxy " + proxy_->origin() +
                                                             " sent data before the tunnel to " +
                                                             endpoint_.authority() + " opened");
    }
  }

  template <class Message>
  void addProxyAuthorization(Message& message) const {
    if (proxy_ && !proxy_->username.empty()) {
      message.set(detail::http::field::proxy_authorization,
                  "Basic " + detail::base64(proxy_->username + ":" + proxy_->password));
    }
  }

  Response exchange(const Request& request, detail::Clock::time_point deadline, bool reused) {
    return tls_ ? exchangeOn(*tls_, request, deadline, reused)
                : exchangeOn(*plain_, request, deadline, reused);
  }

  template <class Stream>
  Response exchangeOn(Stream& stream, const Request& request, detail::Clock::time_point deadline,
                      bool reused) {
    namespace http = detail::http;
    namespace asio = detail::asio;
    detail::beast::get_lowest_layer(stream).expires_at(deadline);
    detail::beast::error_code ec;
    if (request.body_file.empty()) {
      http::request<http::string_body> message;
      prepare(message, request);
      message.body() = request.body;
      message.prepare_payload();
      ec = run([&](auto handler) { http::async_write(stream, message, std::move(handler)); });
    } else {
      http::request<http::file_body> message;
      prepare(message, request);
      message.body().open(request.body_file.c_str(), detail::beast::file_mode::scan, ec);
      if (ec) throw std::invalid_argument("cannot open " + request.body_file + ": " + ec.message());
      message.prepare_payload();
      ec = run([&](auto handler) { http::async_write(stream, message, std::move(handler)); });
    }
    if (ec) {
      if (reused && (ec == asio::error::broken_pipe || ec == asio::error::connection_reset)) {
        throw detail::StaleConnection{};
      }
      fail(TransportError::Kind::kIo, "sending to", ec);
    }
    http::response_parser<http::string_body> parser;
    parser.body_limit(options_.max_response_bytes);
    if (request.method == "HEAD") parser.skip(true);  // a Content-Length, but no body
    ec = run([&](auto handler) { http::async_read(stream, buffer_, parser, std::move(handler)); });
    if (ec) {
      if (reused && ec == http::error::end_of_stream) throw detail::StaleConnection{};
      fail(TransportError::Kind::kIo, "reading the response from", ec);
    }
    auto& message = parser.get();
    Response response;
    response.status = static_cast<int>(message.result_int());
    response.reason = std::string(message.reason());
    for (const auto& field : message) {
      response.headers.emplace_back(asciiLower(std::string(field.name_string())),
                                    std::string(field.value()));
    }
    response.body = std::move(message.body());
    if (!message.keep_alive()) reset();
    return response;
  }

  template <class Message>
  void prepare(Message& message, const Request& request) {
    namespace http = detail::http;
    message.method_string(request.method);
    // Plain http through a proxy: the absolute form, and the proxy's credentials.
    message.target(proxy_ && !endpoint_.tls() ? endpoint_.origin() + request.target
                                              : request.target);
    if (proxy_ && !endpoint_.tls()) addProxyAuthorization(message);
    message.version(11);
    message.set(http::field::host, endpoint_.authority());
    message.set(http::field::user_agent, options_.user_agent);
    message.keep_alive(true);
    for (const auto& [name, value] : request.headers) message.set(name, value);
  }

  Endpoint endpoint_;
  Options options_;
  std::shared_ptr<detail::ssl::context> context_;
  std::optional<Proxy> proxy_;
  detail::asio::io_context io_;
  std::optional<detail::beast::ssl_stream<detail::beast::tcp_stream>> tls_;
  std::optional<detail::beast::tcp_stream> plain_;
  detail::beast::flat_buffer buffer_;
};

// Requests from any number of threads at once, each on a connection of its own (closed after
// its response). The TLS context is built once and shared read-only.
class Client {
 public:
  // Throws std::invalid_argument when the CA bundle holds no PEM certificate or the proxy
  // settings are malformed (read once, here, when Options leaves them unset).
  Client(Endpoint endpoint, Options options)
      : endpoint_(std::move(endpoint)), options_(std::move(options)) {
    context_ = detail::makeContext(options_.tls);
    options_.proxy = detail::proxySettings(options_);
  }

  const Endpoint& endpoint() const { return endpoint_; }
  std::optional<Proxy> proxy() const {
    return options_.proxy->proxyFor(endpoint_.host, endpoint_.port);
  }

  Response send(const Request& request, std::chrono::milliseconds timeout) const {
    Connection connection(endpoint_, context_, options_);
    return connection.send(request, timeout);
  }

 private:
  Endpoint endpoint_;
  Options options_;
  std::shared_ptr<detail::ssl::context> context_;
};

}  // namespace banlieue::sdk::https
