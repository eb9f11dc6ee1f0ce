#include "host/roles/provider/console_server.h"

#include "host/common/logging.h"
#include "host/kube/api_error.h"
#include "host/roles/provider/console_access.h"

#include <arpa/inet.h>
#include <netinet/in.h>
#include <poll.h>
#include <sys/socket.h>
#include <unistd.h>

#include <banlieue/sdk/json.h>
#include <fmt/format.h>

#include <algorithm>
#include <cerrno>
#include <cstring>
#include <thread>

namespace banlieue::roles::provider {
namespace {

namespace json = sdk::json;
using SteadyTime = std::chrono::steady_clock::time_point;

inline const kube::ResourceType kConsoleVirtualMachineType{"banlieue.io", "v1alpha1",
                                                           "virtualmachines", true};
constexpr std::chrono::milliseconds kPollSlice{200};
constexpr size_t kChunk = size_t{16} * 1024;

bool readable(int fd, std::chrono::milliseconds timeout) {
  pollfd p{fd, POLLIN, 0};
  int n = ::poll(&p, 1, static_cast<int>(timeout.count()));
  return n > 0;
}

bool sendAll(int fd, std::string_view data) {
  while (!data.empty()) {
    ssize_t n = ::send(fd, data.data(), data.size(), MSG_NOSIGNAL);
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) return false;
    data.remove_prefix(static_cast<size_t>(n));
  }
  return true;
}

// The hello line (without its newline); what came after it in the same reads is the first input
// of the stream and goes to `rest`.
StatusOr<std::string> readHello(int fd, SteadyTime deadline, const std::atomic<bool>& stop,
                                std::string& rest) {
  std::string buffer;
  char chunk[4096];
  while (true) {
    if (auto nl = buffer.find('\n'); nl != std::string::npos) {
      rest = buffer.substr(nl + 1);
      buffer.resize(nl);
      return buffer;
    }
    if (buffer.size() > kMaxConsoleHello) {
      return Status(
          Code::kInvalidArgument, "BadConsoleRequest",
          "console request: no newline within " + std::to_string(kMaxConsoleHello) + " bytes");
    }
    if (stop.load() || std::chrono::steady_clock::now() >= deadline) {
      return Status(Code::kDeadlineExceeded, "ConsoleRequestTimeout",
                    "no console request line arrived in time");
    }
    if (!readable(fd, kPollSlice)) continue;
    ssize_t n = ::recv(fd, chunk, sizeof chunk, 0);
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) {
      return Status(Code::kCancelled, "ClientGone", "the client left before asking for a console");
    }
    buffer.append(chunk, static_cast<size_t>(n));
  }
}

}  // namespace

ConsoleServer::ConsoleServer(RuntimeContext& context, MachineDirectory machines,
                             ConsoleServerOptions options)
    : context_(context), machines_(std::move(machines)), options_(std::move(options)) {}

ConsoleServer::~ConsoleServer() {
  if (listen_fd_ >= 0) ::close(listen_fd_);
}

Status ConsoleServer::listen() {
  auto unavailable = [&](const std::string& what) {
    return Status(Code::kFailedPrecondition, "ConsolePortUnavailable",
                  fmt::format("console server on {}:{}: {}: {}", options_.address, options_.port,
                              what, std::strerror(errno)));
  };
  sockaddr_in addr{};
  addr.sin_family = AF_INET;
  addr.sin_port = htons(static_cast<uint16_t>(options_.port));
  if (::inet_pton(AF_INET, options_.address.c_str(), &addr.sin_addr) != 1) {
    return {Code::kInvalidArgument, "ConsoleAddressInvalid",
            "console server: '" + options_.address + "' is not an IPv4 address"};
  }
  listen_fd_ = ::socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
  if (listen_fd_ < 0) return unavailable("socket");
  int one = 1;
  ::setsockopt(listen_fd_, SOL_SOCKET, SO_REUSEADDR, &one, sizeof one);
  if (::bind(listen_fd_, reinterpret_cast<sockaddr*>(&addr), sizeof addr) != 0) {
    return unavailable("bind");
  }
  if (::listen(listen_fd_, 16) != 0) return unavailable("listen");
  socklen_t len = sizeof addr;
  ::getsockname(listen_fd_, reinterpret_cast<sockaddr*>(&addr), &len);
  port_ = ntohs(addr.sin_port);
  return Status::ok();
}

void ConsoleServer::run(const std::atomic<bool>& stop) {
  auto stopping = [&] { return stop.load() || context_.stopping.load(); };
  while (!stopping()) {
    if (listen_fd_ < 0 || !readable(listen_fd_, kPollSlice)) continue;
    int fd = ::accept4(listen_fd_, nullptr, nullptr, SOCK_CLOEXEC);
    if (fd < 0) continue;
    ++sessions_;
    std::thread([this, fd, &stop] {
      serve(fd, stop);
      ::close(fd);
      std::lock_guard lock(mu_);
      --sessions_;
      ended_.notify_all();
    }).detach();
  }
  // Every session watches the same stop and ends within a poll slice and its plugin read.
  std::unique_lock lock(mu_);
  ended_.wait(lock, [&] { return sessions_.load() == 0; });
}

void ConsoleServer::serve(int fd, const std::atomic<bool>& stop) {
  auto log = common::logger("console");
  auto stopping = [&] { return stop.load() || context_.stopping.load(); };
  auto refuse = [&](const Status& why, const std::string& who) {
    log->warn("console refused{}: {}: {}", who.empty() ? "" : " to " + who, why.reason(),
              why.message());
    sendAll(fd, consoleVerdictLine(why));
  };

  std::string typed_early;
  auto line =
      readHello(fd, std::chrono::steady_clock::now() + options_.hello_timeout, stop, typed_early);
  if (!line.ok()) return refuse(line.status(), "");
  auto hello = parseConsoleHello(*line);
  if (!hello.ok()) return refuse(hello.status(), "");
  const std::string vm_key = hello->ns + "/" + hello->virtual_machine;

  // Who: the apiserver's authenticator says, from the token (which is never logged or kept).
  auto token_review = context_.client.create(kTokenReviewType, "", tokenReviewBody(hello->token));
  if (!token_review.ok()) {
    return refuse({Code::kUnavailable, "ReviewFailed",
                   "the apiserver did not review the token: " + token_review.status().message()},
                  "");
  }
  auto user = reviewedUser(*token_review);
  if (!user.ok()) return refuse(user.status(), "");
  // May they: the authorizer says, from RBAC on the virtual subresource.
  auto access_review =
      context_.client.create(kSubjectAccessReviewType, "",
                             consoleAccessReviewBody(*user, hello->ns, hello->virtual_machine));
  if (!access_review.ok()) {
    return refuse({Code::kUnavailable, "ReviewFailed",
                   "the apiserver did not review the access: " + access_review.status().message()},
                  user->username);
  }
  if (auto allowed =
          consoleAccessDecision(*access_review, *user, hello->ns, hello->virtual_machine);
      !allowed.isOk()) {
    return refuse(allowed, user->username);
  }

  // Which machine: the one the VM runs on, when it runs on this Provider.
  auto vm = context_.client.get(kConsoleVirtualMachineType, hello->ns, hello->virtual_machine);
  if (!vm.ok()) {
    return refuse(kube::isNotFound(vm.status())
                      ? Status(Code::kNotFound, "VirtualMachineNotFound",
                               "virtualmachine " + vm_key + " does not exist")
                      : Status(Code::kUnavailable, "ReadFailed",
                               "virtualmachine " + vm_key + ": " + vm.status().message()),
                  user->username);
  }
  const std::string placed_on = json::stringOr(&*vm, "status.scheduled.providerName");
  if (hello->ns != context_.provider_namespace || placed_on != context_.provider_name) {
    return refuse({Code::kFailedPrecondition, "NotServedHere",
                   "virtualmachine " + vm_key + " is " +
                       (placed_on.empty() ? std::string("not placed on any Provider yet")
                                          : "on Provider " + hello->ns + "/" + placed_on) +
                       ", not on " + context_.provider_namespace + "/" + context_.provider_name},
                  user->username);
  }
  const std::string kind = json::stringOr(&*vm, "status.infrastructureRef.kind");
  const std::string machine_name = json::stringOr(&*vm, "status.infrastructureRef.name");
  runtime::Object machine =
      kind.empty() ? nullptr : machines_.find(kind, hello->ns + "/" + machine_name);
  if (!machine) {
    return refuse({Code::kFailedPrecondition, "WaitingForMachine",
                   "virtualmachine " + vm_key + " has no machine on the backend yet"},
                  user->username);
  }
  auto instance = context_.session.instance();
  if (!instance) {
    return refuse({Code::kUnavailable, "ProviderNotConnected",
                   "provider " + context_.provider_name +
                       " is not connected to its backend (see the Provider's conditions)"},
                  user->username);
  }
  rapidjson::Document request(rapidjson::kObjectType);
  auto& a = request.GetAllocator();
  request.AddMember("kind", json::stringValue(kind, a), a);
  request.AddMember("machine", rapidjson::Value(*machine, a), a);
  request.AddMember("console", json::stringValue(hello->console, a), a);
  const std::string machine_uid = json::stringOr(machine.get(), "metadata.uid");
  std::unique_ptr<plugin::PluginConsole> console;
  plugin::CallResult opened;
  {
    // Opening is a call on the machine like any other; the stream that follows is not (a
    // reconcile may run beside it: the plugin keeps its own console apart from its calls).
    auto lock = context_.lockMachine(machine_uid);
    opened = instance->openConsole(json::serialize(request), console,
                                   context_.callOptions(machine_uid, "console of " + vm_key));
  }
  if (!opened.ok()) return refuse(statusOf(opened), user->username);
  rapidjson::Document reply;
  std::string description;
  if (!reply.Parse(opened.outcome.body.c_str()).HasParseError()) {
    description = json::stringOr(&reply, "status.description");
  }
  if (hello->console == "webmks") {
    // A ticket console: the URL is the answer and nothing streams. It is a credential: it goes
    // to the person who asked and nowhere else (no log line, no Event).
    ConsoleConnected ticket;
    ticket.console = hello->console;
    ticket.description = description;
    ticket.url = json::stringOr(&reply, "status.url");
    ticket.expires_in_seconds = json::integer(&reply, "status.expiresInSeconds").value_or(0);
    console.reset();  // a plugin that opened a stream as well: closed, it is not asked for
    if (ticket.url.empty()) {
      return refuse(
          {Code::kInternal, "ProviderProtocolError",
           "the provider's plugin answered the webmks console of " + vm_key + " without a URL"},
          user->username);
    }
    const bool sent = sendAll(fd, consoleVerdictLine(ticket));
    std::fill(ticket.url.begin(), ticket.url.end(), '\0');
    std::fill(opened.outcome.body.begin(), opened.outcome.body.end(), '\0');
    if (!sent) return;
    const std::string valid =
        ticket.expires_in_seconds > 0
            ? fmt::format(" (a ticket valid for {} s)", ticket.expires_in_seconds)
            : std::string(" (a ticket)");
    log->info("webmks console of {} handed to {}{}", vm_key, user->username, valid);
    context_.events.normal(*vm, "ConsoleOpened", "Console",
                           user->username + " opened the webmks console" + valid);
    return;
  }
  if (!console) return refuse(statusOf(opened), user->username);
  if (!sendAll(fd, consoleVerdictLine(Status::ok(), hello->console, description))) return;
  log->info("console of {} opened by {} ({})", vm_key, user->username, description);
  context_.events.normal(*vm, "ConsoleOpened", "Console",
                         user->username + " opened the " + hello->console + " console");

  // The stream: output is read on a thread of its own, input here; either ending ends both.
  const auto began = std::chrono::steady_clock::now();
  std::atomic<bool> over{false};
  std::atomic<size_t> shown{0};
  std::string ended_why = "the person left";
  std::mutex why_mu;
  auto end = [&](const std::string& why) {
    std::lock_guard lock(why_mu);
    if (!over.exchange(true)) ended_why = why;
  };
  std::thread output([&] {
    while (!over.load() && !stopping()) {
      auto io = console->read(kChunk, kPollSlice);
      if (io.ended()) return end("the console ended (the machine stopped)");
      if (!io.ok()) return end("reading the console failed (" + sdk::codeName(io.code) + ")");
      if (!io.data.empty()) {
        if (!sendAll(fd, io.data)) return end("the person left");
        shown += io.data.size();
      }
    }
  });
  size_t typed = 0;
  auto last_input = std::chrono::steady_clock::now();
  auto take = [&](std::string_view input) {
    auto io = console->write(input);
    typed += io.written;
    if (io.ended())
      end("the console ended (the machine stopped)");
    else if (!io.ok())
      end("writing to the console failed");
  };
  if (!typed_early.empty()) take(typed_early);
  char chunk[kChunk];
  while (!over.load()) {
    if (stopping()) {
      end("the provider stopped serving (leadership moved or it shut down)");
      break;
    }
    if (std::chrono::steady_clock::now() - last_input > options_.idle_timeout) {
      end(fmt::format("no input for {} s", options_.idle_timeout.count()));
      break;
    }
    if (!readable(fd, kPollSlice)) continue;
    ssize_t n = ::recv(fd, chunk, sizeof chunk, 0);
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) {
      end("the person left");
      break;
    }
    last_input = std::chrono::steady_clock::now();
    take(std::string_view(chunk, static_cast<size_t>(n)));
  }
  ::shutdown(fd, SHUT_RDWR);  // wakes the output thread's send, if blocked
  output.join();
  console.reset();  // console_close, before the instance may go
  const auto seconds =
      std::chrono::duration_cast<std::chrono::seconds>(std::chrono::steady_clock::now() - began)
          .count();
  std::string note =
      fmt::format("{}'s {} console closed after {} s: {}; {} bytes typed, {} shown", user->username,
                  hello->console, seconds, ended_why, typed, shown.load());
  log->info("console of {}: {}", vm_key, note);
  context_.events.normal(*vm, "ConsoleClosed", "Console", note);
}

}  // namespace banlieue::roles::provider
