// HttpTransport over Boost.Beast (ADR 0007 explains why not cpprestsdk here). Each step runs
// as an asynchronous operation on a private io_context with the request's deadline on the
// TCP stream, so a stalled vCenter can never block a call past its deadline.
#include "plugins/vsphere/src/http_transport.h"

#include <banlieue/sdk/text.h>

#include <openssl/ssl.h>
#include <boost/asio/connect.hpp>
#include <boost/asio/ip/tcp.hpp>
#include <boost/asio/ssl.hpp>
#include <boost/beast/core.hpp>
#include <boost/beast/http.hpp>
#include <boost/beast/ssl.hpp>

#include <algorithm>
#include <cctype>
#include <optional>

namespace banlieue::vsphere {
namespace {

namespace asio = boost::asio;
namespace beast = boost::beast;
namespace http = beast::http;
namespace ssl = asio::ssl;
using tcp = asio::ip::tcp;
using Clock = std::chrono::steady_clock;

constexpr uint64_t kMaxResponseBytes = 64ull << 20;  // a huge RetrievePropertiesEx page

bool isIpLiteral(const std::string& host) {
  beast::error_code ec;
  (void)asio::ip::make_address(host, ec);
  return !ec;
}

// The first request on a kept-alive connection the server has meanwhile closed fails before
// the server saw it; only then is a retry safe for non-idempotent SOAP methods.
struct StaleConnection {};

class BeastTransport final : public HttpTransport {
 public:
  BeastTransport(Url url, const TlsOptions& tls)
      : url_(std::move(url)), ssl_context_(ssl::context::tls_client) {
    ssl_context_.set_options(ssl::context::default_workarounds | ssl::context::no_sslv2 |
                             ssl::context::no_sslv3 | ssl::context::no_tlsv1 |
                             ssl::context::no_tlsv1_1);
    if (tls.insecure_skip_verify) {
      ssl_context_.set_verify_mode(ssl::verify_none);
      return;
    }
    ssl_context_.set_verify_mode(ssl::verify_peer);
    if (tls.ca_bundle_pem.empty()) {
      ssl_context_.set_default_verify_paths();
    } else {
      beast::error_code ec;
      ssl_context_.add_certificate_authority(asio::buffer(tls.ca_bundle_pem), ec);
      if (ec) throw std::invalid_argument("caBundle is not a PEM certificate: " + ec.message());
    }
  }

  ~BeastTransport() override { reset(); }

  HttpResponse send(const HttpRequest& request, std::chrono::milliseconds timeout) override {
    const Clock::time_point deadline = Clock::now() + timeout;
    const bool reused = connected();
    try {
      if (!reused) connect(deadline);
      return exchange(request, deadline, reused);
    } catch (const StaleConnection&) {
      reset();
      connect(deadline);
      return exchange(request, deadline, false);
    }
  }

  void reset() override {
    beast::error_code ignored;
    if (tls_stream_) beast::get_lowest_layer(*tls_stream_).socket().close(ignored);
    tls_stream_.reset();
    buffer_.clear();
  }

 private:
  bool connected() const { return tls_stream_.has_value(); }

  // Runs the asynchronous operation `start` to completion (or to the stream's expiry).
  template <class Start>
  beast::error_code run(Start&& start) {
    beast::error_code result = asio::error::would_block;
    start([&result](beast::error_code ec, auto&&...) { result = ec; });
    io_.restart();
    io_.run();
    return result;
  }

  [[noreturn]] void fail(TransportError::Kind kind, const std::string& step,
                         const beast::error_code& ec) {
    reset();
    if (ec == beast::error::timeout) {
      throw TransportError(TransportError::Kind::kTimeout,
                           step + " " + url_.origin() + " timed out");
    }
    throw TransportError(kind, step + " " + url_.origin() + ": " + ec.message());
  }

  void connect(Clock::time_point deadline) {
    tcp::resolver resolver(io_);
    beast::error_code ec;
    auto endpoints = resolver.resolve(url_.host, url_.port, ec);
    if (ec) fail(TransportError::Kind::kConnect, "resolving", ec);

    beast::tcp_stream stream(io_);
    stream.expires_at(deadline);
    ec = run([&](auto handler) { stream.async_connect(endpoints, std::move(handler)); });
    if (ec) {
      beast::error_code ignored;
      stream.socket().close(ignored);
      fail(TransportError::Kind::kConnect, "connecting to", ec);
    }
    tls_stream_.emplace(std::move(stream), ssl_context_);
    SSL* handle = tls_stream_->native_handle();
    if (!isIpLiteral(url_.host)) SSL_set_tlsext_host_name(handle, url_.host.c_str());
    if (ssl_context_.native_handle() != nullptr &&
        SSL_CTX_get_verify_mode(ssl_context_.native_handle()) != SSL_VERIFY_NONE) {
      tls_stream_->set_verify_callback(ssl::host_name_verification(url_.host));
    }
    beast::get_lowest_layer(*tls_stream_).expires_at(deadline);
    ec = run([&](auto handler) {
      tls_stream_->async_handshake(ssl::stream_base::client, std::move(handler));
    });
    if (ec) fail(TransportError::Kind::kTls, "TLS handshake with", ec);
  }

  HttpResponse exchange(const HttpRequest& request, Clock::time_point deadline, bool reused) {
    return exchangeOn(*tls_stream_, request, deadline, reused);
  }

  template <class Stream>
  HttpResponse exchangeOn(Stream& stream, const HttpRequest& request, Clock::time_point deadline,
                          bool reused) {
    beast::get_lowest_layer(stream).expires_at(deadline);
    beast::error_code ec;
    if (request.body_file.empty()) {
      http::request<http::string_body> message;
      prepare(message, request);
      message.body() = request.body;
      message.prepare_payload();
      ec = run([&](auto handler) { http::async_write(stream, message, std::move(handler)); });
    } else {
      http::request<http::file_body> message;
      prepare(message, request);
      message.body().open(request.body_file.c_str(), beast::file_mode::scan, ec);
      if (ec) throw std::invalid_argument("cannot open " + request.body_file + ": " + ec.message());
      message.prepare_payload();
      ec = run([&](auto handler) { http::async_write(stream, message, std::move(handler)); });
    }
    if (ec) {
      if (reused && (ec == asio::error::broken_pipe || ec == asio::error::connection_reset)) {
        throw StaleConnection{};
      }
      fail(TransportError::Kind::kIo, "sending to", ec);
    }

    http::response_parser<http::string_body> parser;
    parser.body_limit(kMaxResponseBytes);
    // A HEAD response announces a Content-Length but carries no body.
    if (request.method == "HEAD") parser.skip(true);
    ec = run([&](auto handler) { http::async_read(stream, buffer_, parser, std::move(handler)); });
    if (ec) {
      if (reused && ec == http::error::end_of_stream) throw StaleConnection{};
      fail(TransportError::Kind::kIo, "reading the response from", ec);
    }
    auto& message = parser.get();
    HttpResponse response;
    response.status = static_cast<int>(message.result_int());
    for (const auto& field : message) {
      response.headers.emplace_back(sdk::asciiLower(std::string(field.name_string())),
                                    std::string(field.value()));
    }
    response.body = std::move(message.body());
    if (!message.keep_alive()) reset();
    return response;
  }

  template <class Message>
  void prepare(Message& message, const HttpRequest& request) {
    message.method_string(request.method);
    message.target(request.target);
    message.version(11);
    message.set(http::field::host, url_.host + ":" + url_.port);
    message.set(http::field::user_agent, "banlieue-provider-vsphere");
    message.keep_alive(true);
    for (const auto& [name, value] : request.headers) message.set(name, value);
  }

  Url url_;
  asio::io_context io_;
  ssl::context ssl_context_;
  std::optional<beast::ssl_stream<beast::tcp_stream>> tls_stream_;
  beast::flat_buffer buffer_;
};

}  // namespace

std::unique_ptr<HttpTransport> makeBeastTransport(const Url& url, const TlsOptions& tls) {
  return std::make_unique<BeastTransport>(url, tls);
}

}  // namespace banlieue::vsphere
