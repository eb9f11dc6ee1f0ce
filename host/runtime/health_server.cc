#include "host/runtime/health_server.h"

#include "host/common/metrics.h"

#include <boost/asio/ip/tcp.hpp>
#include <boost/asio/strand.hpp>
#include <boost/beast/core.hpp>
#include <boost/beast/http.hpp>

#include <chrono>
#include <thread>
#include <utility>
#include <vector>

namespace banlieue::runtime {
namespace {

namespace asio = boost::asio;
namespace beast = boost::beast;
namespace http = beast::http;
using tcp = asio::ip::tcp;

struct NamedCheck {
  std::string name;
  HealthCheck check;
};

// Runs the checks; the body says which failed (and with ?verbose which passed).
http::status runChecks(const std::vector<NamedCheck>& checks, bool verbose, std::string& body) {
  bool all_ok = true;
  std::string detail;
  for (const auto& [name, check] : checks) {
    std::string reason;
    bool ok = false;
    try {
      ok = check(reason);
    } catch (const std::exception& e) {
      reason = e.what();
    }
    all_ok = all_ok && ok;
    if (ok) {
      detail += "[+]" + name + " ok\n";
    } else {
      detail += "[-]" + name + " failed: " + (reason.empty() ? "no reason given" : reason) + "\n";
    }
  }
  if (all_ok && !verbose) {
    body = "ok";
  } else {
    body = detail + (all_ok ? "check passed\n" : "check failed\n");
  }
  return all_ok ? http::status::ok : http::status::internal_server_error;
}

// One connection: read a request, answer it, repeat while keep-alive; 10 s idle limit so a
// silent client cannot hold the connection forever.
class Session : public std::enable_shared_from_this<Session> {
 public:
  Session(tcp::socket socket, const std::vector<NamedCheck>& liveness,
          const std::vector<NamedCheck>& readiness, bool serves_metrics)
      : stream_(std::move(socket)),
        liveness_(liveness),
        readiness_(readiness),
        serves_metrics_(serves_metrics) {}

  void start() { read(); }

 private:
  void read() {
    request_ = {};
    stream_.expires_after(std::chrono::seconds(10));
    http::async_read(stream_, buffer_, request_,
                     [self = shared_from_this()](beast::error_code ec, size_t) {
                       if (!ec) self->answer();
                     });
  }

  void answer() {
    auto response = std::make_shared<http::response<http::string_body>>();
    response->version(request_.version());
    response->keep_alive(request_.keep_alive());
    auto route = routeHealthRequest(
        request_.method() == http::verb::get || request_.method() == http::verb::head,
        std::string_view(request_.target().data(), request_.target().size()));
    std::string body;
    http::status status = http::status::ok;
    std::string content_type = "text/plain; charset=utf-8";
    switch (route.endpoint) {
      case HealthRoute::Endpoint::kMethodNotAllowed:
        status = http::status::method_not_allowed;
        body = "only GET\n";
        break;
      case HealthRoute::Endpoint::kLiveness:
        status = runChecks(liveness_, route.verbose, body);
        break;
      case HealthRoute::Endpoint::kReadiness:
        status = runChecks(readiness_, route.verbose, body);
        break;
      case HealthRoute::Endpoint::kMetrics:
        if (serves_metrics_) {
          body = MetricsRegistry::global().render();
          content_type = "text/plain; version=0.0.4; charset=utf-8";
          break;
        }
        [[fallthrough]];  // metrics have an address and port of their own
      case HealthRoute::Endpoint::kNotFound:
        status = http::status::not_found;
        body = serves_metrics_ ? "not found: serves /healthz, /readyz and /metrics\n"
                               : "not found: serves /healthz and /readyz\n";
        break;
    }
    response->result(status);
    response->set(http::field::content_type, content_type);
    response->body() = std::move(body);
    response->prepare_payload();
    http::async_write(stream_, *response,
                      [self = shared_from_this(), response](beast::error_code ec, size_t) {
                        if (!ec && response->keep_alive()) self->read();
                      });
  }

  beast::tcp_stream stream_;
  beast::flat_buffer buffer_;
  http::request<http::string_body> request_;
  const std::vector<NamedCheck>& liveness_;
  const std::vector<NamedCheck>& readiness_;
  bool serves_metrics_;
};

}  // namespace

HealthRoute routeHealthRequest(bool get_or_head, std::string_view target) {
  using Endpoint = HealthRoute::Endpoint;
  std::string_view path = target.substr(0, target.find('?'));
  bool verbose = target.find("verbose") != std::string_view::npos;
  if (!get_or_head) return {Endpoint::kMethodNotAllowed, verbose};
  if (path == "/healthz" || path == "/livez") return {Endpoint::kLiveness, verbose};
  if (path == "/readyz") return {Endpoint::kReadiness, verbose};
  if (path == "/metrics") return {Endpoint::kMetrics, verbose};
  return {Endpoint::kNotFound, verbose};
}

struct HealthServer::Impl {
  asio::io_context io{1};
  tcp::acceptor acceptor{io};
  std::vector<NamedCheck> liveness, readiness;
  std::thread thread;
  int port = 0;
  bool serves_metrics = true;

  void accept() {
    acceptor.async_accept(asio::make_strand(io), [this](beast::error_code ec, tcp::socket socket) {
      if (ec) return;  // acceptor closed
      std::make_shared<Session>(std::move(socket), liveness, readiness, serves_metrics)->start();
      accept();
    });
  }
};

HealthServer::HealthServer() : impl_(std::make_unique<Impl>()) {}
HealthServer::~HealthServer() {
  stop();
}

void HealthServer::addLivenessCheck(const std::string& name, HealthCheck check) {
  impl_->liveness.push_back({name, std::move(check)});
}
void HealthServer::addReadinessCheck(const std::string& name, HealthCheck check) {
  impl_->readiness.push_back({name, std::move(check)});
}

void HealthServer::setServesMetrics(bool serves) {
  impl_->serves_metrics = serves;
}

Status HealthServer::start(const std::string& address, int port) {
  beast::error_code ec;
  auto ip = asio::ip::make_address(address, ec);
  if (ec)
    return error(Code::kInvalidArgument, "BadAddress",
                 "health server address " + address + ": " + ec.message());
  tcp::endpoint endpoint(ip, static_cast<unsigned short>(port));
  impl_->acceptor.open(endpoint.protocol(), ec);
  if (!ec) impl_->acceptor.set_option(asio::socket_base::reuse_address(true), ec);
  if (!ec) impl_->acceptor.bind(endpoint, ec);
  if (!ec) impl_->acceptor.listen(asio::socket_base::max_listen_connections, ec);
  if (ec) {
    return error(Code::kUnavailable, "BindFailed",
                 "cannot serve /healthz, /readyz and /metrics on " + address + ":" +
                     std::to_string(port) + ": " + ec.message());
  }
  impl_->port = impl_->acceptor.local_endpoint().port();
  impl_->accept();
  impl_->thread = std::thread([this] { impl_->io.run(); });
  return Status::ok();
}

int HealthServer::port() const {
  return impl_->port;
}

void HealthServer::stop() {
  if (!impl_->thread.joinable()) return;
  asio::post(impl_->io, [this] {
    beast::error_code ignored;
    impl_->acceptor.close(ignored);
  });
  impl_->io.stop();
  impl_->thread.join();
}

}  // namespace banlieue::runtime
