// A websocket client (RFC 6455) on the SDK's HTTPS client (docs/adr/0029, 0040): the same
// endpoint rules, TLS verification and proxy tunnel as every request, then Boost.Beast's
// websocket (the Sec-WebSocket-Key/Accept check, masked client frames, ping/pong, the close
// handshake). Generic: a backend's console (Proxmox's vncwebsocket, vSphere's webmks) is a
// websocket behind the backend's own auth, which the caller puts in the upgrade's headers.
// Header-only like https_client.h; include it from the one source file that includes that.
//
// After the handshake the socket runs on a thread of its own: a read is always pending (so
// pings are answered and the peer's end is seen at once) and fills an inbox that read()
// drains; write() and close() hand their work to that thread and wait for it.
#pragma once

#include <banlieue/sdk/https.h>
#include <banlieue/sdk/https_client.h>

#include <boost/beast/websocket.hpp>

#include <algorithm>
#include <condition_variable>
#include <memory>
#include <mutex>
#include <string>
#include <thread>

namespace banlieue::sdk::https {

struct WebSocketOptions {
  // Nothing received (not even a pong) for this long ends the socket; it pings at half.
  std::chrono::seconds idle_timeout{60};
  // Received bytes read() has not taken yet: reading pauses above this.
  size_t inbox_limit = 1u << 20;
  size_t max_message_bytes = 1u << 20;
};

namespace detail {

namespace websocket = beast::websocket;

class BeastWebSocket final : public WebSocket {
 public:
  // Connects, upgrades with `upgrade` (its target and headers; the method is GET) and starts the
  // socket's thread. Throws TransportError, UpgradeRefused, std::invalid_argument (http://).
  BeastWebSocket(const Endpoint& endpoint, std::shared_ptr<ssl::context> context,
                 const Options& options, const Request& upgrade, std::chrono::milliseconds timeout,
                 const WebSocketOptions& ws_options)
      : origin_(endpoint.origin()),
        inbox_limit_(ws_options.inbox_limit),
        connection_(std::make_unique<Connection>(endpoint, std::move(context), options)) {
    const auto deadline = Clock::now() + timeout;
    ws_ = std::make_unique<Stream>(connection_->detachTls(timeout));
    auto& io = connection_->ioContext();
    beast::get_lowest_layer(*ws_).expires_at(deadline);
    ws_->set_option(websocket::stream_base::decorator(
        [headers = upgrade.headers, agent = options.user_agent](websocket::request_type& req) {
          req.set(http::field::user_agent, agent);
          for (const auto& [name, value] : headers) req.set(name, value);
        }));
    websocket::response_type answer;
    beast::error_code ec = websocket::error::closed;
    ws_->async_handshake(answer, endpoint.authority(), upgrade.target,
                         [&ec](beast::error_code result) { ec = result; });
    io.restart();
    io.run();
    if (ec == websocket::error::upgrade_declined) {
      Response refused;
      refused.status = static_cast<int>(answer.result_int());
      refused.reason = std::string(answer.reason());
      refused.body = answer.body();
      throw UpgradeRefused(std::move(refused));
    }
    if (ec) {
      throw TransportError(
          ec == beast::error::timeout ? TransportError::Kind::kTimeout : TransportError::Kind::kIo,
          "websocket handshake with " + origin_ + ": " +
              (ec == beast::error::timeout ? std::string("timed out") : ec.message()));
    }
    // From here the websocket's own timers apply (Beast wants the TCP timer off for them).
    beast::get_lowest_layer(*ws_).expires_never();
    websocket::stream_base::timeout timeouts{};
    timeouts.handshake_timeout = std::chrono::seconds(5);  // also the closing handshake's
    timeouts.idle_timeout = ws_options.idle_timeout;
    timeouts.keep_alive_pings = true;
    ws_->set_option(timeouts);
    ws_->auto_fragment(false);  // some servers (PVE) drop fragmented frames
    ws_->binary(true);
    ws_->read_message_max(ws_options.max_message_bytes);
    io.restart();
    work_.emplace(asio::make_work_guard(io));
    asio::post(io, [this] { startRead(); });
    thread_ = std::thread([&io] { io.run(); });
  }

  ~BeastWebSocket() override { close(std::chrono::seconds(1)); }
  BeastWebSocket(const BeastWebSocket&) = delete;
  BeastWebSocket& operator=(const BeastWebSocket&) = delete;

  ReadStatus read(std::string& out, size_t max, std::chrono::milliseconds timeout) override {
    std::unique_lock lock(mutex_);
    changed_.wait_for(lock, timeout, [this] { return !inbox_.empty() || ended_; });
    if (inbox_.empty()) return ended_ ? ReadStatus::kClosed : ReadStatus::kTimeout;
    const size_t n = std::min(max, inbox_.size());
    out.append(inbox_, 0, n);
    inbox_.erase(0, n);
    if (paused_ && inbox_.size() < inbox_limit_ / 2 && !ended_) {
      paused_ = false;
      asio::post(connection_->ioContext(), [this] { startRead(); });
    }
    return ReadStatus::kData;
  }

  void write(std::string_view data, std::chrono::milliseconds timeout) override {
    if (hasEnded()) throw TransportError(TransportError::Kind::kIo, ended());
    auto op = std::make_shared<Op>();
    op->data.assign(data);
    asio::post(connection_->ioContext(), [this, op] {
      ws_->async_write(asio::buffer(op->data), [this, op](beast::error_code ec, size_t) {
        if (ec) end(ec);
        op->finish(ec);
      });
    });
    if (!op->wait(timeout)) {
      drop();
      throw TransportError(TransportError::Kind::kTimeout,
                           "the websocket to " + origin_ + " took no data for " +
                               std::to_string(timeout.count()) + " ms");
    }
    if (op->ec) throw TransportError(TransportError::Kind::kIo, ended());
  }

  void close(std::chrono::milliseconds timeout) override {
    if (!thread_.joinable()) return;
    auto op = std::make_shared<Op>();
    if (!hasEnded()) {
      asio::post(connection_->ioContext(), [this, op] {
        ws_->async_close(websocket::close_code::normal,
                         [op](beast::error_code ec) { op->finish(ec); });
      });
      (void)op->wait(timeout);  // a peer that answers with a close frame, or just hangs up
    }
    drop();
    work_.reset();
    connection_->ioContext().stop();
    thread_.join();
    std::lock_guard lock(mutex_);
    if (!ended_) {
      ended_ = true;
      end_reason_ = "closed by this side";
    }
    changed_.notify_all();
  }

  std::string endReason() const override {
    std::lock_guard lock(mutex_);
    return end_reason_;
  }

 private:
  using Stream = websocket::stream<beast::ssl_stream<beast::tcp_stream>>;

  // One write or close handed to the socket's thread.
  struct Op {
    std::mutex mutex;
    std::condition_variable done_changed;
    bool done = false;
    beast::error_code ec;
    std::string data;
    void finish(beast::error_code result) {
      {
        std::lock_guard lock(mutex);
        done = true;
        ec = result;
      }
      done_changed.notify_all();
    }
    bool wait(std::chrono::milliseconds timeout) {
      std::unique_lock lock(mutex);
      return done_changed.wait_for(lock, timeout, [this] { return done; });
    }
  };

  // On the socket's thread only.
  void startRead() {
    ws_->async_read(incoming_, [this](beast::error_code ec, size_t) {
      if (ec) {
        end(ec);
        return;
      }
      bool more = false;
      {
        std::lock_guard lock(mutex_);
        inbox_ += beast::buffers_to_string(incoming_.data());
        more = inbox_.size() < inbox_limit_;
        paused_ = !more;
      }
      incoming_.consume(incoming_.size());
      changed_.notify_all();
      if (more) startRead();
    });
  }

  void end(beast::error_code ec) {
    {
      std::lock_guard lock(mutex_);
      if (ended_) return;
      ended_ = true;
      if (ec == websocket::error::closed) {
        const auto& why = ws_->reason();
        end_reason_ = "closed by the peer (" + std::to_string(why.code) +
                      (why.reason.empty() ? "" : " " + std::string(why.reason.c_str())) + ")";
      } else if (ec == beast::error::timeout) {
        end_reason_ = "no answer from the peer for the idle timeout";
      } else if (ec == asio::error::eof || ec == ssl::error::stream_truncated) {
        end_reason_ = "the peer hung up";
      } else {
        end_reason_ = ec.message();
      }
    }
    changed_.notify_all();
  }

  // Drops the TCP connection (on the socket's thread): pending operations end with an error.
  void drop() {
    asio::post(connection_->ioContext(), [this] {
      beast::error_code ignored;
      beast::get_lowest_layer(*ws_).socket().shutdown(tcp::socket::shutdown_both, ignored);
      beast::get_lowest_layer(*ws_).socket().close(ignored);
    });
  }

  bool hasEnded() const {
    std::lock_guard lock(mutex_);
    return ended_;
  }

  std::string ended() const {
    std::lock_guard lock(mutex_);
    return "the websocket to " + origin_ + " has ended: " + end_reason_;
  }

  const std::string origin_;
  const size_t inbox_limit_;
  std::unique_ptr<Connection> connection_;  // owns the io_context the stream runs on
  std::unique_ptr<Stream> ws_;
  beast::flat_buffer incoming_;  // the socket's thread only
  std::optional<asio::executor_work_guard<asio::io_context::executor_type>> work_;
  std::thread thread_;

  mutable std::mutex mutex_;
  std::condition_variable changed_;
  std::string inbox_;       // guarded by mutex_
  bool paused_ = false;     // guarded by mutex_: no read pending because the inbox is full
  bool ended_ = false;      // guarded by mutex_
  std::string end_reason_;  // guarded by mutex_
};

}  // namespace detail

// Opens a websocket to `endpoint` with `upgrade`'s target and headers (the caller's auth,
// Sec-WebSocket-Protocol, ...), all within `timeout`. Throws TransportError (below HTTP, or a
// handshake that failed), UpgradeRefused (the server's non-101 answer), std::invalid_argument
// (an http:// endpoint, a CA bundle that is not PEM).
inline std::unique_ptr<WebSocket> openWebSocket(const Endpoint& endpoint, const Options& options,
                                                const Request& upgrade,
                                                std::chrono::milliseconds timeout,
                                                const WebSocketOptions& ws_options = {}) {
  Options resolved = options;
  resolved.proxy = detail::proxySettings(options);
  return std::make_unique<detail::BeastWebSocket>(endpoint, detail::makeContext(options.tls),
                                                  resolved, upgrade, timeout, ws_options);
}

}  // namespace banlieue::sdk::https
