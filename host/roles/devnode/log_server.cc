#include "host/roles/devnode/log_server.h"

#include "host/common/logging.h"

#include <sys/socket.h>
#include <sys/time.h>
#include <boost/asio/ip/tcp.hpp>
#include <boost/asio/ssl.hpp>
#include <boost/asio/write.hpp>
#include <boost/beast/core.hpp>
#include <boost/beast/http.hpp>
#include <boost/beast/ssl.hpp>

#include <atomic>
#include <charconv>
#include <chrono>
#include <fstream>
#include <list>
#include <mutex>
#include <thread>
#include <utility>

namespace banlieue::roles::devnode {
namespace {

namespace asio = boost::asio;
namespace ssl = asio::ssl;
namespace beast = boost::beast;
namespace http = beast::http;
using tcp = asio::ip::tcp;
using namespace std::chrono_literals;

constexpr std::string_view kPrefix = "/containerLogs/";
// How often a followed log is checked for new bytes.
constexpr auto kFollowPoll = 250ms;
// A client that neither completes its TLS handshake nor sends its request in this time is
// dropped (a stop also waits at most this long for such a connection).
constexpr int kIoTimeoutSeconds = 10;

std::optional<int64_t> parseCount(std::string_view text) {
  int64_t value = 0;
  auto [end, ec] = std::from_chars(text.data(), text.data() + text.size(), value);
  if (ec != std::errc() || end != text.data() + text.size() || value < 0) return std::nullopt;
  return value;
}

std::string readFrom(const std::filesystem::path& file, std::streamoff offset) {
  std::ifstream in(file, std::ios::binary);
  in.seekg(offset);
  return {std::istreambuf_iterator<char>(in), std::istreambuf_iterator<char>()};
}

}  // namespace

StatusOr<LogRequest> parseLogRequest(std::string_view target) {
  std::string_view path = target.substr(0, target.find('?'));
  std::string_view query =
      path.size() < target.size() ? target.substr(path.size() + 1) : std::string_view();
  if (path.substr(0, kPrefix.size()) != kPrefix) {
    return error(Code::kNotFound, "NotFound", "only /containerLogs/ is served by this node");
  }
  path.remove_prefix(kPrefix.size());
  LogRequest request;
  std::string* parts[] = {&request.ns, &request.pod, &request.container};
  for (std::string* part : parts) {
    auto slash = path.find('/');
    *part = std::string(path.substr(0, slash));
    path = slash == std::string_view::npos ? std::string_view() : path.substr(slash + 1);
    // Names are DNS labels/subdomains: nothing here can climb out of the pods directory.
    if (part->empty() || part->find("..") != std::string::npos) {
      return error(Code::kNotFound, "NotFound",
                   "expected /containerLogs/<namespace>/<pod>/<container>");
    }
  }
  if (!path.empty()) {
    return error(Code::kNotFound, "NotFound",
                 "expected /containerLogs/<namespace>/<pod>/<container>");
  }
  while (!query.empty()) {
    auto amp = query.find('&');
    std::string_view pair = query.substr(0, amp);
    query = amp == std::string_view::npos ? std::string_view() : query.substr(amp + 1);
    auto eq = pair.find('=');
    std::string_view key = pair.substr(0, eq);
    std::string_view value = eq == std::string_view::npos ? "" : pair.substr(eq + 1);
    if (key == "follow") {
      request.follow = value == "true" || value == "1";
    } else if (key == "tailLines" || key == "limitBytes") {
      auto count = parseCount(value);
      if (!count) {
        return error(Code::kInvalidArgument, "BadRequest",
                     std::string(key) + " must be a non-negative integer");
      }
      (key == "tailLines" ? request.tail_lines : request.limit_bytes) = count;
    } else if (key == "previous" && (value == "true" || value == "1")) {
      return error(Code::kInvalidArgument, "BadRequest",
                   "this node keeps no log of a previous container");
    }
    // timestamps, sinceSeconds, sinceTime: not recorded by the node agent; the whole log.
  }
  return request;
}

std::string_view lastLines(std::string_view content, int64_t lines) {
  if (lines <= 0) return content.substr(content.size());
  size_t end = content.size();
  if (end > 0 && content[end - 1] == '\n') --end;
  size_t start = end;
  for (int64_t seen = 0; start > 0; --start) {
    if (content[start - 1] == '\n' && ++seen == lines) break;
  }
  return content.substr(start);
}

std::optional<std::filesystem::path> findContainerLog(const std::filesystem::path& pods_dir,
                                                      const LogRequest& request) {
  std::string prefix = request.ns + "_" + request.pod + "_";
  std::error_code ec;
  for (const auto& entry : std::filesystem::directory_iterator(pods_dir, ec)) {
    std::string name = entry.path().filename().string();
    if (name.rfind(prefix, 0) != 0) continue;
    // The pod name itself may contain no '_' (a DNS subdomain), so the rest is its UID.
    if (name.find('_', prefix.size()) != std::string::npos) continue;
    auto log = entry.path() / (request.container + ".log");
    if (std::filesystem::exists(log, ec)) return log;
  }
  return std::nullopt;
}

struct LogServer::Impl {
  LogServerOptions options;
  asio::io_context io;
  ssl::context tls{ssl::context::tls_server};
  std::optional<tcp::acceptor> acceptor;
  std::thread accept_thread;
  std::atomic<bool> stopping{false};
  struct Session {
    std::thread thread;
    std::shared_ptr<std::atomic<bool>> done = std::make_shared<std::atomic<bool>>(false);
  };
  std::mutex mutex;
  std::list<Session> sessions;  // guarded by mutex

  // Joins the sessions that have ended, so a long-lived agent does not collect threads.
  void reapLocked() {
    for (auto it = sessions.begin(); it != sessions.end();) {
      if (*it->done) {
        it->thread.join();
        it = sessions.erase(it);
      } else {
        ++it;
      }
    }
  }

  void acceptLoop() {
    while (!stopping) {
      boost::system::error_code ec;
      tcp::socket socket(io);
      acceptor->accept(socket, ec);  // NOLINT(bugprone-unused-return-value): ec is checked
      if (ec) {
        if (stopping) return;
        std::this_thread::sleep_for(100ms);  // e.g. EMFILE: do not spin
        continue;
      }
      timeval timeout{kIoTimeoutSeconds, 0};
      ::setsockopt(socket.native_handle(), SOL_SOCKET, SO_RCVTIMEO, &timeout, sizeof(timeout));
      ::setsockopt(socket.native_handle(), SOL_SOCKET, SO_SNDTIMEO, &timeout, sizeof(timeout));
      std::lock_guard lock(mutex);
      reapLocked();
      Session& session = sessions.emplace_back();
      session.thread = std::thread([this, done = session.done, s = std::move(socket)]() mutable {
        serve(std::move(s));
        *done = true;
      });
    }
  }

  void serve(tcp::socket socket) {
    beast::ssl_stream<tcp::socket> stream(std::move(socket), tls);
    boost::system::error_code ec;
    stream.handshake(ssl::stream_base::server, ec);
    if (ec) return;  // no or an untrusted client certificate, or not TLS at all
    beast::flat_buffer buffer;
    http::request<http::empty_body> request;
    http::read(stream, buffer, request, ec);
    if (ec) return;
    answer(stream, request);
    stream.shutdown(ec);
  }

  template <class Stream>
  void reply(Stream& stream, http::status status, std::string body) {
    http::response<http::string_body> response{status, 11};
    response.set(http::field::content_type, "text/plain; charset=utf-8");
    response.body() = std::move(body);
    response.prepare_payload();
    boost::system::error_code ec;
    http::write(stream, response, ec);
  }

  template <class Stream>
  void answer(Stream& stream, const http::request<http::empty_body>& request) {
    if (request.method() != http::verb::get) {
      reply(stream, http::status::method_not_allowed, "only GET\n");
      return;
    }
    auto target = request.target();
    auto parsed = parseLogRequest(std::string_view(target.data(), target.size()));
    if (!parsed.ok()) {
      reply(stream,
            parsed.status().code() == Code::kNotFound ? http::status::not_found
                                                      : http::status::bad_request,
            parsed.status().message() + "\n");
      return;
    }
    auto log = findContainerLog(options.pods_dir, *parsed);
    if (!log) {
      reply(stream, http::status::not_found,
            "container " + parsed->container + " of pod " + parsed->ns + "/" + parsed->pod +
                " has no log on this node\n");
      return;
    }
    std::string content = readFrom(*log, 0);
    std::string body(parsed->tail_lines ? lastLines(content, *parsed->tail_lines) : content);
    if (parsed->limit_bytes && body.size() > static_cast<size_t>(*parsed->limit_bytes)) {
      body.resize(static_cast<size_t>(*parsed->limit_bytes));
    }
    if (!parsed->follow) {
      reply(stream, http::status::ok, std::move(body));
      return;
    }
    follow(stream, *log, std::move(body), static_cast<std::streamoff>(content.size()));
  }

  // Streams what is there, then whatever the container appends, as chunks.
  template <class Stream>
  void follow(Stream& stream, const std::filesystem::path& log, std::string first,
              std::streamoff offset) {
    http::response<http::empty_body> header{http::status::ok, 11};
    header.set(http::field::content_type, "text/plain; charset=utf-8");
    header.chunked(true);
    http::response_serializer<http::empty_body> serializer{header};
    boost::system::error_code ec;
    http::write_header(stream, serializer, ec);
    if (ec) return;
    std::string pending = std::move(first);
    while (!stopping) {
      if (!pending.empty()) {
        asio::write(stream, http::make_chunk(asio::buffer(pending)), ec);
        if (ec) return;  // the client went away
        pending.clear();
      }
      std::this_thread::sleep_for(kFollowPoll);
      std::error_code fs_ec;
      auto size = std::filesystem::file_size(log, fs_ec);
      if (fs_ec) break;  // the pod's directory is gone: its log ends here
      if (static_cast<std::streamoff>(size) > offset) {
        pending = readFrom(log, offset);
        offset += static_cast<std::streamoff>(pending.size());
      }
    }
    asio::write(stream, http::make_chunk_last(), ec);
  }
};

LogServer::LogServer(LogServerOptions options) : impl_(std::make_unique<Impl>()) {
  impl_->options = std::move(options);
}

LogServer::~LogServer() {
  stop();
}

Status LogServer::start() {
  auto& o = impl_->options;
  boost::system::error_code ec;
  impl_->tls.set_options(ssl::context::default_workarounds | ssl::context::no_sslv2 |
                         ssl::context::no_sslv3 | ssl::context::no_tlsv1 |
                         ssl::context::no_tlsv1_1);
  impl_->tls.use_certificate_chain_file(o.cert_file.string(), ec);
  if (!ec) impl_->tls.use_private_key_file(o.key_file.string(), ssl::context::pem, ec);
  if (!ec) impl_->tls.load_verify_file(o.client_ca_file.string(), ec);
  if (ec) {
    return error(Code::kInvalidArgument, "TLSFilesInvalid",
                 "cannot load the log server's certificate, key or client CA: " + ec.message());
  }
  impl_->tls.set_verify_mode(ssl::verify_peer | ssl::verify_fail_if_no_peer_cert);
  try {
    tcp::endpoint endpoint(asio::ip::make_address(o.address), static_cast<uint16_t>(o.port));
    impl_->acceptor.emplace(impl_->io, endpoint);
  } catch (const std::exception& e) {
    return error(Code::kUnavailable, "BindFailed",
                 "cannot listen on " + o.address + ":" + std::to_string(o.port) + ": " + e.what());
  }
  impl_->accept_thread = std::thread([this] { impl_->acceptLoop(); });
  common::logger("devnode")->info("serving container logs on https://{}:{}", o.address, port());
  return Status::ok();
}

int LogServer::port() const {
  return impl_->acceptor ? impl_->acceptor->local_endpoint().port() : -1;
}

void LogServer::stop() {
  if (!impl_ || impl_->stopping.exchange(true)) return;
  if (impl_->acceptor) {
    boost::system::error_code ec;
    // Wakes the blocked accept(): shutdown first, as close alone does not on Linux.
    ::shutdown(impl_->acceptor->native_handle(), SHUT_RDWR);
    impl_->acceptor->close(ec);
  }
  if (impl_->accept_thread.joinable()) impl_->accept_thread.join();
  std::lock_guard lock(impl_->mutex);
  for (auto& session : impl_->sessions) {
    if (session.thread.joinable()) session.thread.join();
  }
  impl_->sessions.clear();
}

}  // namespace banlieue::roles::devnode
