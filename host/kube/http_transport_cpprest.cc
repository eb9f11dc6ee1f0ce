// The only translation unit that includes cpprestsdk (slow headers, a U() macro that clashes
// with fmt and gtest: built with _TURN_OFF_PLATFORM_STRING).
#include "host/common/logging.h"
#include "host/common/version.h"
#include "host/kube/http_transport.h"
#include "host/kube/line_framer.h"

#include <cpprest/http_client.h>
#include <boost/asio/ssl.hpp>

#include <algorithm>
#include <cctype>
#include <map>
#include <mutex>
#include <thread>

namespace banlieue::kube {
namespace {

// The longest watch line (one event) accepted before the stream is cut.
constexpr size_t kMaxWatchLine = size_t{16} << 20;

namespace http = web::http;

std::atomic<size_t> g_connection_pools{0};

// A cpprestsdk client (one keep-alive connection pool), counted for liveConnectionPools().
struct ConnectionPool {
  ConnectionPool(const std::string& server, const http::client::http_client_config& config)
      : client(server, config) {
    ++g_connection_pools;
  }
  ~ConnectionPool() { --g_connection_pools; }
  ConnectionPool(const ConnectionPool&) = delete;
  ConnectionPool& operator=(const ConnectionPool&) = delete;

  http::client::http_client client;
};

class CpprestTransport final : public HttpTransport {
 public:
  explicit CpprestTransport(Connection connection)
      : connection_(std::move(connection)), host_(hostOf(connection_.server)) {}

  std::string host() const override { return host_; }

  StatusOr<HttpResponse> send(const HttpRequest& request) override {
    return performWithRetries(request, nullptr, nullptr);
  }

  StatusOr<HttpResponse> stream(const HttpRequest& request,
                                const std::function<bool(std::string_view)>& on_line,
                                const std::atomic<bool>* cancel) override {
    return performWithRetries(request, &on_line, cancel);
  }

 private:
  // Two retries, each at most once and safe for any verb:
  //  - a request that could not be written never reached the server (a pooled keep-alive
  //    connection the server closed, e.g. when it restarted). cpprestsdk puts such a
  //    connection back into its pool, so every pooled connection may be dead: the request is
  //    sent again through a fresh pool, as Go's HTTP transport retries unsent requests. The
  //    old pool goes when the last request still using it (a watch, say) ends;
  //  - a 401 with a dynamic token (exec plugin) is retried with a fresh token, as client-go
  //    does; a 401 response has no streamed body yet, so retrying a watch is safe too.
  // host:port of the server URL, as client-go's url.Host.
  static std::string hostOf(const std::string& server) {
    try {
      web::uri uri(server);
      return uri.port() > 0 ? uri.host() + ":" + std::to_string(uri.port()) : uri.host();
    } catch (const std::exception&) {
      return server;
    }
  }

  StatusOr<HttpResponse> performWithRetries(const HttpRequest& request,
                                            const std::function<bool(std::string_view)>* on_line,
                                            const std::atomic<bool>* cancel) {
    std::shared_ptr<ConnectionPool> pool = poolFor(request.timeout);
    auto response = perform(*pool, request, on_line, cancel);
    if (!response.ok() && response.status().reason() == "RequestNotSent") {
      common::logger("kube")->info("{}; retrying on a new connection", response.status().message());
      pool = replacePool(request.timeout, pool);
      response = perform(*pool, request, on_line, cancel);
    }
    if (response.ok() && response->status == 401 && connection_.invalidateToken()) {
      return perform(*pool, request, on_line, cancel);
    }
    return response;
  }

  http::client::http_client_config config(std::chrono::milliseconds timeout) const {
    http::client::http_client_config cfg;
    cfg.set_timeout(std::chrono::duration_cast<std::chrono::microseconds>(timeout));
    cfg.set_validate_certificates(!connection_.insecure_skip_tls_verify);
    Connection c = connection_;
    cfg.set_ssl_context_callback([c](boost::asio::ssl::context& ctx) {
      if (!c.ca_pem.empty()) {
        // cpprestsdk has loaded the system's default verify paths by now. With a CA
        // configured, client-go trusts that CA alone: start again from an empty store (the
        // context frees the old one).
        SSL_CTX_set_cert_store(ctx.native_handle(), X509_STORE_new());
        ctx.add_certificate_authority(boost::asio::buffer(c.ca_pem));
      }
      if (!c.client_cert_pem.empty()) {
        ctx.use_certificate_chain(boost::asio::buffer(c.client_cert_pem));
        ctx.use_private_key(boost::asio::buffer(c.client_key_pem), boost::asio::ssl::context::pem);
      }
    });
    return cfg;
  }

  StatusOr<HttpResponse> perform(ConnectionPool& pool, const HttpRequest& request,
                                 const std::function<bool(std::string_view)>* on_line,
                                 const std::atomic<bool>* cancel) {
    try {
      http::client::http_client& client = pool.client;
      http::http_request req(request.method);
      req.set_request_uri(request.path);
      req.headers().add("User-Agent", std::string("banlieue/") + kVersion);
      req.headers().add("Accept", "application/json");
      // tls-server-name: cpprestsdk takes the name it sends as SNI and verifies the server
      // certificate against from the Host header (and pools connections per that name). The
      // API server does not route on Host, so this changes nothing else.
      if (!connection_.tls_server_name.empty()) {
        req.headers().add("Host", connection_.tls_server_name);
      }
      if (auto token = connection_.bearerToken(); !token.empty()) {
        req.headers().add("Authorization", "Bearer " + token);
      }
      std::string content_type = "application/json";
      for (const auto& [name, value] : request.headers) {
        if (name == "Content-Type") {
          content_type = value;
        } else {
          req.headers().add(name, value);
        }
      }
      if (!request.body.empty()) req.set_body(request.body, content_type);

      // Cancelling the token closes the connection: a watch that stops early (or is cancelled)
      // does not wait for the server to end the stream.
      pplx::cancellation_token_source abort;
      http::http_response response = client.request(req, abort.get_token()).get();
      HttpResponse out;
      out.status = response.status_code();
      for (const auto& [name, value] : response.headers()) {
        std::string lower = name;
        std::transform(lower.begin(), lower.end(), lower.begin(),
                       [](unsigned char ch) { return static_cast<char>(std::tolower(ch)); });
        out.headers[lower] = value;
      }
      if (on_line == nullptr || out.status < 200 || out.status >= 300) {
        out.body = response.extract_utf8string(true).get();
        return out;
      }
      // Stream the body: read what arrives, hand over complete lines. A blocked read only ends
      // when data arrives, so a small guard thread turns the caller's cancel flag into a
      // cancellation of the request (which closes the connection).
      std::atomic<bool> finished{false};
      std::thread guard;
      if (cancel != nullptr) {
        guard = std::thread([&] {
          while (!finished.load() && !cancel->load())
            std::this_thread::sleep_for(std::chrono::milliseconds(50));
          if (!finished.load()) abort.cancel();
        });
      }
      struct JoinGuard {
        std::atomic<bool>& finished;
        std::thread& thread;
        ~JoinGuard() {
          finished = true;
          if (thread.joinable()) thread.join();
        }
      } join_guard{finished, guard};
      auto body = response.body();
      LineFramer framer(kMaxWatchLine);
      std::vector<uint8_t> chunk(size_t{64} * 1024);
      for (;;) {
        if (cancel != nullptr && cancel->load()) {
          abort.cancel();
          break;
        }
        // getn() waits for a full buffer; a watch needs each event as it comes. So: block for
        // one byte, then take whatever else has already arrived.
        auto buffer = body.streambuf();
        auto first = buffer.bumpc().get();
        if (first == std::char_traits<char>::eof()) break;  // the server ended the stream
        chunk[0] = static_cast<uint8_t>(first);
        size_t n = 1;
        if (size_t available = buffer.in_avail(); available > 0) {
          n += buffer.getn(chunk.data() + 1, std::min(available, chunk.size() - 1)).get();
        }
        auto framed =
            framer.feed(std::string_view(reinterpret_cast<const char*>(chunk.data()), n), *on_line);
        if (framed == LineFramer::Result::kStopped) {
          abort.cancel();
          return out;
        }
        if (framed == LineFramer::Result::kTooLong) {
          // No object is this large (etcd's limit is 1.5 MiB): a broken or hostile endpoint,
          // which must not grow this process's memory without bound.
          abort.cancel();
          return error(Code::kResourceExhausted, "WatchLineTooLong",
                       request.method + " " + connection_.server + request.path + ": over " +
                           std::to_string(kMaxWatchLine >> 20) +
                           " MiB of stream without a line end");
        }
      }
      framer.finish(*on_line);
      return out;
    } catch (const pplx::task_canceled&) {
      if (cancel != nullptr && cancel->load()) return HttpResponse{200, {}, {}};  // asked to stop
      return error(Code::kCancelled, "Cancelled",
                   request.method + " " + connection_.server + request.path + ": cancelled");
    } catch (const http::http_exception& e) {
      if (cancel != nullptr && cancel->load()) return HttpResponse{200, {}, {}};
      std::string what = e.what();
      if (e.error_code()) what += " (" + e.error_code().message() + ")";
      bool timeout =
          what.find("timed out") != std::string::npos || what.find("Timeout") != std::string::npos;
      // The request could not be written: nothing reached the server (typically a pooled
      // keep-alive connection the server closed, e.g. after it restarted).
      bool unsent = what.find("Failed to write request") != std::string::npos;
      return error(timeout ? Code::kDeadlineExceeded : Code::kUnavailable,
                   timeout ? "Timeout" : (unsent ? "RequestNotSent" : "ConnectionFailed"),
                   request.method + " " + connection_.server + request.path + ": " + what);
    } catch (const std::exception& e) {
      return error(Code::kUnavailable, "ConnectionFailed",
                   request.method + " " + connection_.server + request.path + ": " + e.what());
    }
  }

  // One pool per timeout in use; http_client is safe for concurrent requests. Each request
  // holds its pool, so a pool replaced while requests use it lives until the last one ends.
  std::shared_ptr<ConnectionPool> poolFor(std::chrono::milliseconds timeout) {
    std::lock_guard lock(mutex_);
    auto& slot = pools_[timeout.count()];
    if (!slot) slot = std::make_shared<ConnectionPool>(connection_.server, config(timeout));
    return slot;
  }

  // The pool to retry on after `failed` could not write a request. When another request
  // replaced it already, that replacement is used: one restart makes one new pool.
  std::shared_ptr<ConnectionPool> replacePool(std::chrono::milliseconds timeout,
                                              const std::shared_ptr<ConnectionPool>& failed) {
    std::lock_guard lock(mutex_);
    auto& slot = pools_[timeout.count()];
    if (!slot || slot == failed) {
      slot = std::make_shared<ConnectionPool>(connection_.server, config(timeout));
    }
    return slot;
  }

  Connection connection_;
  std::string host_;
  std::mutex mutex_;
  std::map<int64_t, std::shared_ptr<ConnectionPool>> pools_;
};

}  // namespace

size_t liveConnectionPools() {
  return g_connection_pools.load();
}

StatusOr<std::unique_ptr<HttpTransport>> makeHttpTransport(const Connection& connection) {
  if (connection.server.rfind("https://", 0) != 0 && connection.server.rfind("http://", 0) != 0) {
    return error(Code::kInvalidArgument, "InvalidServer",
                 connection.source + ": server '" + connection.server + "' must be an http(s) URL");
  }
  return std::unique_ptr<HttpTransport>(std::make_unique<CpprestTransport>(connection));
}

}  // namespace banlieue::kube
