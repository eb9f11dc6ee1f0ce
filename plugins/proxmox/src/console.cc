#include "plugins/proxmox/src/console.h"

#include "plugins/proxmox/src/errors.h"
#include "plugins/proxmox/src/machine.h"

#include <banlieue/sdk/uri.h>

#include <algorithm>
#include <chrono>

namespace banlieue::proxmox {

namespace json = sdk::json;
using sdk::Code;
using sdk::Status;

namespace {

// The serial port termproxy opens: the first, as ABI 1.3's "serial" console is defined.
constexpr const char* kSerialPort = "serial0";
// How long a write waits for PVE to take input before it calls the console stalled.
constexpr std::chrono::seconds kWriteStall{10};
// Input per message: PVE drops frames over 64 KiB (older) or 128 KiB, and keystrokes are small.
constexpr size_t kMaxInput = 4096;
// How long console_close waits for PVE to take the close frame.
constexpr std::chrono::seconds kCloseWait{2};

Status closed(const std::string& message) {
  return {Code::kOutOfRange, "ConsoleClosed", message};
}

class PveConsole final : public sdk::Console {
 public:
  PveConsole(std::unique_ptr<WebSocket> socket, std::string early_output, std::string what,
             ConsoleSessions& sessions, std::string port)
      : socket_(std::move(socket)),
        pending_(std::move(early_output)),
        what_(std::move(what)),
        sessions_(sessions),
        port_(std::move(port)) {}
  ~PveConsole() override {
    socket_->close(kCloseWait);
    sessions_.release(port_);
  }
  PveConsole(const PveConsole&) = delete;
  PveConsole& operator=(const PveConsole&) = delete;

  Status read(char* buf, size_t len, std::chrono::milliseconds timeout, size_t& n) override {
    n = 0;
    std::string got;
    if (!pending_.empty()) {  // what came with termproxy's "OK"
      got.swap(pending_);
    } else {
      switch (socket_->read(got, len, timeout)) {
        case WebSocket::ReadStatus::kTimeout: return Status::ok();
        case WebSocket::ReadStatus::kClosed:
          return closed("the " + what_ + " has ended: " + socket_->endReason());
        case WebSocket::ReadStatus::kData: break;
      }
    }
    n = std::min(len, got.size());
    std::copy_n(got.data(), n, buf);
    if (n < got.size()) pending_ = got.substr(n);
    return Status::ok();
  }

  Status write(std::string_view data, size_t& n) override {
    n = 0;
    if (data.empty()) return Status::ok();
    const std::string_view chunk = data.substr(0, kMaxInput);
    // pve-xtermjs: a message "0:<byte length>:<bytes>" carries input to the terminal.
    std::string message = "0:" + std::to_string(chunk.size()) + ":";
    message.append(chunk);
    try {
      socket_->write(message, kWriteStall);
    } catch (const TransportError& e) {
      if (e.kind() == TransportError::Kind::kTimeout) {
        return {Code::kUnavailable, "ConsoleStalled",
                "PVE took no input on the " + what_ + " for " +
                    std::to_string(kWriteStall.count()) + " s"};
      }
      return closed("the " + what_ + " has ended: " + socket_->endReason());
    }
    n = chunk.size();
    return Status::ok();
  }

 private:
  std::unique_ptr<WebSocket> socket_;
  std::string pending_;  // the reader's only
  const std::string what_;
  ConsoleSessions& sessions_;
  const std::string port_;
};

Status refused(const std::string& what, const std::string& why) {
  return {Code::kUnavailable, "ConsoleRefused", "PVE refused the " + what + ": " + why};
}

// termproxy's first answer: "OK", perhaps with the terminal's first output after it. Anything
// else, or the connection closing, means it did not take the ticket.
Status awaitOk(WebSocket& socket, Deadline deadline, const std::string& what,
               std::string& early_output) {
  std::string got;
  while (got.size() < 2) {
    const auto now = std::chrono::steady_clock::now();
    if (now >= deadline) {
      return {Code::kDeadlineExceeded, "Timeout",
              "termproxy did not accept the session of the " + what + " in time"};
    }
    if (socket.read(got, 4096, timeLeft(deadline)) == WebSocket::ReadStatus::kClosed) {
      return refused(what,
                     "termproxy closed the connection without accepting the session's "
                     "ticket (" +
                         socket.endReason() + ")");
    }
  }
  if (got.compare(0, 2, "OK") != 0) {
    return refused(what, "termproxy answered '" + got.substr(0, 2) + "' instead of OK");
  }
  early_output = got.substr(2);
  return Status::ok();
}

}  // namespace

Status openMachineConsole(const PveClient& client, ConsoleSessions& sessions, const sdk::Call& call,
                          const sdk::ConsoleRequest& request, std::unique_ptr<sdk::Console>& out,
                          sdk::Reply& reply) {
  if (request.console != "serial") return sdk::unimplemented("console " + request.console);
  const std::string ns = json::stringOr(request.machine, "metadata.namespace");
  const std::string name = "ProxmoxMachine " + ns + (ns.empty() ? "" : "/") +
                           json::stringOr(request.machine, "metadata.name");
  if (request.provider_id.empty()) {
    return {Code::kFailedPrecondition, "MachineNotProvisioned",
            name + " has no VM yet (no spec.providerID): its console exists once provisioned"};
  }
  std::optional<GuestRef> ref = parseProviderId(request.provider_id);
  if (!ref) {
    return {Code::kInvalidArgument, "InvalidProviderID",
            "spec.providerID '" + request.provider_id + "' of " + name +
                " is not proxmox://<node>/<vmid>"};
  }
  const std::string vmid = std::to_string(ref->vmid);
  const std::string what =
      "serial console " + std::string(kSerialPort) + " of VM " + vmid + " on node " + ref->node;
  const std::string vm = "/nodes/" + sdk::pathSegment(ref->node) + "/qemu/" + vmid;
  const Deadline deadline = call.deadline();
  return withPveErrors("opening the " + what, [&]() -> Status {
    rapidjson::Document current = client.get(vm + "/status/current", deadline);
    if (json::stringOr(&current, "status") != "running") {
      return {Code::kFailedPrecondition, "MachineNotRunning",
              "VM " + vmid + " on node " + ref->node + " is " +
                  json::stringOr(&current, "status", "not running") +
                  ": its serial console exists while it runs"};
    }
    // What the guest runs with (pending changes apply at its next boot): `qm terminal` needs
    // the port to be a socket, and fails only after termproxy took the ticket.
    rapidjson::Document config = client.get(vm + "/config?current=1", deadline);
    const std::string serial = asString(json::member(&config, kSerialPort));
    if (serial.empty()) {
      return {Code::kFailedPrecondition, "NoSerialPort",
              "VM " + vmid + " on node " + ref->node + " has no serial port " + kSerialPort +
                  ": add one (`qm set " + vmid +
                  " --serial0 socket`, or Hardware > Add > "
                  "Serial Port in PVE) and restart the guest, which must run a getty on ttyS0"};
    }
    if (serial != "socket") {
      return {Code::kFailedPrecondition, "NoSerialPort",
              "serial port " + std::string(kSerialPort) + " of VM " + vmid + " on node " +
                  ref->node + " is '" + serial +
                  "', not a socket: PVE's terminal reaches socket serial ports only"};
    }

    const std::string port_key = ref->node + "/" + vmid + "/" + kSerialPort;
    if (!sessions.claim(port_key)) {
      return {Code::kFailedPrecondition, "ConsoleBusy",
              "the " + what + " is open already (QEMU's serial socket serves one at a time)"};
    }
    struct Release {
      ConsoleSessions& sessions;
      const std::string& port;
      bool kept = false;
      ~Release() {
        if (!kept) sessions.release(port);
      }
    } release{sessions, port_key};

    rapidjson::Document session =
        client.post(vm + "/termproxy", {{"serial", kSerialPort}}, deadline);
    const int64_t port = asInt(json::member(&session, "port"));
    std::string ticket = asString(json::member(&session, "ticket"));
    const std::string user = asString(json::member(&session, "user"));
    // The ticket and its copy in the websocket's query are overwritten however this ends.
    Form query{{"port", std::to_string(port)}, {"vncticket", ticket}};
    struct Scrub {
      std::string& ticket;
      std::string& query_ticket;
      ~Scrub() {
        wipeSecret(ticket);
        wipeSecret(query_ticket);
      }
    } scrub{ticket, query[1].second};
    if (port <= 0 || ticket.empty() || user.empty()) {
      throw PveError(502, "POST " + vm + "/termproxy: the answer has no port, ticket or user");
    }

    std::unique_ptr<WebSocket> socket;
    try {
      socket = client.openWebSocket(vm + "/vncwebsocket", query, deadline);
    } catch (const PveError& e) {
      // A VNC ticket lasts 40 s from when PVE made it: a refusal is a slow call or clocks
      // that disagree, not wrong credentials (those fail the termproxy call before).
      if (e.message().find("ticket") != std::string::npos && e.httpStatus() != 401) {
        return refused(what, e.message() +
                                 " (a console ticket is valid for 40 s: check that the "
                                 "node's clock is right)");
      }
      throw;
    }
    std::string login = user + ":" + ticket + "\n";
    try {
      socket->write(login, timeLeft(deadline));
    } catch (...) {
      wipeSecret(login);
      throw;
    }
    wipeSecret(login);
    std::string early_output;
    Status accepted = awaitOk(*socket, deadline, what, early_output);
    if (!accepted.isOk()) return accepted;

    out = std::make_unique<PveConsole>(std::move(socket), std::move(early_output), what, sessions,
                                       port_key);
    release.kept = true;
    auto& a = reply.allocator();
    reply.status().AddMember("console", "serial", a);
    reply.status().AddMember("description", json::stringValue(what + " (PVE termproxy)", a), a);
    return Status::ok();
  });
}

}  // namespace banlieue::proxmox
