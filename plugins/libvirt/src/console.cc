#include "plugins/libvirt/src/console.h"

#include "plugins/libvirt/src/libvirt_handles.h"
#include "plugins/libvirt/src/machine_domain.h"

#include <atomic>
#include <chrono>
#include <thread>

namespace banlieue::libvirt {

namespace json = sdk::json;
using sdk::Code;
using sdk::Status;

namespace {

// How often a read or a write that found the stream empty (or full) looks again.
constexpr std::chrono::milliseconds kStreamPoll{10};
// How long a write waits for the daemon to take bytes before it calls the console stalled.
constexpr std::chrono::seconds kWriteStall{10};

class DomainConsole final : public sdk::Console {
 public:
  DomainConsole(virConnectPtr conn, Stream stream) : conn_(conn), stream_(std::move(stream)) {
    virConnectRef(conn_);  // the stream needs its connection for as long as it is open
  }
  ~DomainConsole() override {
    if (!ended_) (void)virStreamAbort(stream_.get());
    stream_.reset();
    virConnectClose(conn_);
  }
  DomainConsole(const DomainConsole&) = delete;
  DomainConsole& operator=(const DomainConsole&) = delete;

  Status read(char* buf, size_t len, std::chrono::milliseconds timeout, size_t& n) override {
    n = 0;
    const auto until = std::chrono::steady_clock::now() + timeout;
    while (true) {
      if (ended_) return closed("the domain's console has ended");
      const int got = virStreamRecv(stream_.get(), buf, len);
      if (got > 0) {
        n = static_cast<size_t>(got);
        return Status::ok();
      }
      if (got == 0) {
        ended_ = true;  // the daemon closed it: the domain stopped
        return closed("the domain's console has ended (the domain stopped)");
      }
      if (got == -1) {
        ended_ = true;
        return closed("the domain's console stream failed: " + LibvirtError::last().message);
      }
      if (std::chrono::steady_clock::now() >= until) return Status::ok();  // -2: nothing yet
      std::this_thread::sleep_for(kStreamPoll);
    }
  }

  Status write(std::string_view data, size_t& n) override {
    n = 0;
    const auto until = std::chrono::steady_clock::now() + kWriteStall;
    while (!data.empty()) {
      if (ended_) return closed("the domain's console has ended");
      const int sent = virStreamSend(stream_.get(), data.data(), data.size());
      if (sent > 0) {
        n = static_cast<size_t>(sent);
        return Status::ok();
      }
      if (sent == -1) {
        ended_ = true;
        return closed("the domain's console stream failed: " + LibvirtError::last().message);
      }
      if (std::chrono::steady_clock::now() >= until) {
        return {Code::kUnavailable, "ConsoleStalled",
                "the daemon took no input for " + std::to_string(kWriteStall.count()) + " s"};
      }
      std::this_thread::sleep_for(kStreamPoll);
    }
    return Status::ok();
  }

 private:
  static Status closed(const std::string& message) {
    return {Code::kOutOfRange, "ConsoleClosed", message};
  }

  virConnectPtr conn_;
  Stream stream_;
  std::atomic<bool> ended_{false};
};

}  // namespace

Status openMachineConsole(Connection& connection, const sdk::Call& call,
                          const sdk::ConsoleRequest& request, std::unique_ptr<sdk::Console>& out,
                          sdk::Reply& reply) {
  if (request.console != "serial") return sdk::unimplemented("console " + request.console);
  ConnRef conn(connection.acquire(call));
  std::optional<Domain> dom =
      machineDomain(conn.get(), request.provider_id,
                    json::stringOr(request.machine, "metadata.uid"), "its console");
  if (!dom) {
    return {Code::kNotFound, "MachineNotFound",
            "the domain of spec.providerID " + request.provider_id + " does not exist on " +
                connection.uri()};
  }
  const char* name = virDomainGetName(dom->get());
  const std::string domain = name != nullptr ? name : "?";
  const int active = virDomainIsActive(dom->get());
  if (active < 0) raiseLast("reading the state of domain " + domain);
  if (active == 0) {
    return {Code::kFailedPrecondition, "MachineNotRunning",
            "domain " + domain + " is shut off: its serial console exists while it runs"};
  }
  // The test driver's domains run nothing and have no character devices behind them.
  if (connection.isTestDriver()) {
    return {Code::kFailedPrecondition, "ConsoleUnavailable",
            "domain " + domain + " runs on libvirt's test driver, which has no consoles"};
  }
  Stream stream(virStreamNew(conn.get(), VIR_STREAM_NONBLOCK));
  if (!stream) raiseLast("creating a stream for the console of domain " + domain);
  if (virDomainOpenConsole(dom->get(), nullptr, stream.get(), VIR_DOMAIN_CONSOLE_SAFE) != 0) {
    const LibvirtError e = LibvirtError::last();
    if (e.code == VIR_ERR_NO_SUPPORT || e.code == VIR_ERR_OPERATION_UNSUPPORTED) {
      return {Code::kUnimplemented, "NotSupportedByBackend",
              "the console of domain " + domain + ": " + e.message};
    }
    // VIR_DOMAIN_CONSOLE_SAFE refuses a second session with this error (virsh console holds
    // one, or another banlieue console does).
    if (e.code == VIR_ERR_OPERATION_FAILED) {
      return {Code::kFailedPrecondition, "ConsoleBusy",
              "the serial console of domain " + domain + " is open elsewhere: " + e.message};
    }
    throw toError(e, "opening the console of domain " + domain);
  }
  out = std::make_unique<DomainConsole>(conn.get(), std::move(stream));
  auto& a = reply.allocator();
  reply.status().AddMember("console", "serial", a);
  reply.status().AddMember(
      "description", json::stringValue("serial console of domain " + domain + " (pty)", a), a);
  return Status::ok();
}

}  // namespace banlieue::libvirt
