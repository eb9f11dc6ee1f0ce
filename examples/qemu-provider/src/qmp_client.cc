#include "qmp_client.h"

#include <banlieue/sdk/status.h>
#include <poll.h>
#include <sys/socket.h>
#include <sys/un.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstring>

namespace qemu_provider {
namespace {

using banlieue::sdk::Code;
using banlieue::sdk::Error;
namespace json = banlieue::sdk::json;

int remainingMs(Deadline deadline) {
  auto left = std::chrono::duration_cast<std::chrono::milliseconds>(
      deadline - std::chrono::steady_clock::now());
  return static_cast<int>(std::clamp<int64_t>(left.count(), 0, 60'000));
}

Error timeout(const std::string& what) {
  return Error(Code::kDeadlineExceeded, "QmpTimeout", "QEMU did not answer " + what + " in time");
}

}  // namespace

QmpClient::QmpClient(const std::filesystem::path& socket, Deadline deadline) : deadline_(deadline) {
  sockaddr_un address{};
  address.sun_family = AF_UNIX;
  const std::string path = socket.string();
  if (path.size() >= sizeof(address.sun_path)) {
    throw Error(Code::kInvalidArgument, "StateDirTooLong",
                "the QMP socket path " + path + " is longer than a unix socket allows");
  }
  std::memcpy(address.sun_path, path.c_str(), path.size() + 1);
  fd_ = ::socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC | SOCK_NONBLOCK, 0);
  if (fd_ < 0) {
    throw Error(Code::kUnavailable, "QmpUnreachable", std::string("socket: ") + strerror(errno));
  }
  // A unix connect does not wait for the server's accept: it succeeds at once or fails.
  if (connect(fd_, reinterpret_cast<const sockaddr*>(&address), sizeof(address)) != 0 &&
      errno != EINPROGRESS) {
    std::string why = strerror(errno);
    close(fd_);
    fd_ = -1;
    throw Error(Code::kUnavailable, "QmpUnreachable", "cannot connect to " + path + ": " + why);
  }
  try {
    auto greeting = receive();
    if (json::member(&greeting, "QMP") == nullptr) {
      throw Error(Code::kUnavailable, "QmpProtocolError", "no QMP greeting on " + path);
    }
    execute("qmp_capabilities");
  } catch (...) {
    close(fd_);
    fd_ = -1;
    throw;
  }
}

QmpClient::~QmpClient() {
  if (fd_ >= 0) close(fd_);
}

rapidjson::Document QmpClient::execute(std::string_view command, std::string_view arguments) {
  std::string line = R"({"execute":")" + std::string(command) + "\"";
  if (!arguments.empty()) line += R"(,"arguments":)" + std::string(arguments);
  line += "}\r\n";
  send(line);
  auto reply = receive();
  if (const auto* error = json::member(&reply, "error"); error != nullptr) {
    throw Error(Code::kFailedPrecondition, "QmpCommandFailed",
                "QMP " + std::string(command) + " failed: " + json::stringOr(error, "desc"));
  }
  rapidjson::Document result;
  if (const auto* value = json::member(&reply, "return"); value != nullptr) {
    result.CopyFrom(*value, result.GetAllocator());
  }
  // The analyzer loses the Document's allocator through its move (as in the Proxmox plugin).
  return result;  // NOLINT(clang-analyzer-cplusplus.NewDeleteLeaks)
}

std::string QmpClient::status() {
  auto reply = execute("query-status");
  return json::stringOr(&reply, "status");
}

void QmpClient::quit() {
  try {
    execute("quit");
  } catch (const Error& e) {
    if (e.reason() != "QmpUnreachable") throw;  // closed before the reply: QEMU is exiting
  }
}

void QmpClient::send(const std::string& line) {
  size_t sent = 0;
  while (sent < line.size()) {
    ssize_t n = ::send(fd_, line.data() + sent, line.size() - sent, MSG_NOSIGNAL);
    if (n > 0) {
      sent += static_cast<size_t>(n);
      continue;
    }
    if (n < 0 && errno != EAGAIN && errno != EINTR) {
      throw Error(Code::kUnavailable, "QmpUnreachable",
                  std::string("QMP connection lost: ") + strerror(errno));
    }
    pollfd fd = {fd_, POLLOUT, 0};
    if (poll(&fd, 1, remainingMs(deadline_)) == 0) throw timeout("a command");
  }
}

rapidjson::Document QmpClient::receive() {
  while (true) {
    auto end = buffer_.find('\n');
    if (end != std::string::npos) {
      std::string line = buffer_.substr(0, end);
      buffer_.erase(0, end + 1);
      if (line.find_first_not_of(" \r\t") == std::string::npos) continue;
      rapidjson::Document message;
      try {
        message = json::parse(line, "QMP message");
      } catch (const Error& e) {
        // QEMU's output, not the object, is at fault: retried like any backend trouble.
        throw Error(Code::kUnavailable, "QmpProtocolError", e.what());
      }
      if (json::member(&message, "event") != nullptr) continue;  // asynchronous; not ours
      return message;
    }
    if (buffer_.size() > (1u << 20)) {
      throw Error(Code::kUnavailable, "QmpProtocolError", "a QMP message longer than 1 MiB");
    }
    pollfd fd = {fd_, POLLIN, 0};
    int ready = poll(&fd, 1, remainingMs(deadline_));
    if (ready == 0) throw timeout("on its QMP socket");
    if (ready < 0 && errno == EINTR) continue;
    char chunk[4096];
    ssize_t n = recv(fd_, chunk, sizeof(chunk), 0);
    if (n == 0) throw Error(Code::kUnavailable, "QmpUnreachable", "QEMU closed its QMP socket");
    if (n < 0) {
      if (errno == EAGAIN || errno == EINTR) continue;
      throw Error(Code::kUnavailable, "QmpUnreachable",
                  std::string("QMP connection lost: ") + strerror(errno));
    }
    buffer_.append(chunk, static_cast<size_t>(n));
  }
}

}  // namespace qemu_provider
