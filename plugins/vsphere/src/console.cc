#include "plugins/vsphere/src/console.h"

#include "plugins/vsphere/src/errors.h"
#include "plugins/vsphere/src/machine.h"

#include <banlieue/sdk/json.h>

#include <algorithm>
#include <optional>

namespace banlieue::vsphere {
namespace {

namespace json = sdk::json;
using sdk::Code;
using sdk::Status;

std::string machineName(const sdk::ConsoleRequest& request) {
  std::string ns = json::stringOr(request.machine, "metadata.namespace");
  std::string name = json::stringOr(request.machine, "metadata.name");
  return "VSphereMachine " + (ns.empty() ? name : ns + "/" + name);
}

void wipe(std::string& secret) {
  std::fill(secret.begin(), secret.end(), '\0');
}

}  // namespace

VmTicket parseVmTicket(const pugi::xml_node& returnval) {
  VmTicket t;
  t.ticket = childText(returnval, "ticket").value_or("");
  t.host = childText(returnval, "host").value_or("");
  t.ssl_thumbprint = childText(returnval, "sslThumbprint").value_or("");
  t.url = childText(returnval, "url").value_or("");
  if (auto port = childText(returnval, "port")) {
    try {
      t.port = std::stoi(*port);
    } catch (const std::exception&) {
      t.port = 0;
    }
  }
  return t;
}

std::string webMksUrl(const VmTicket& ticket, const std::string& fallback_host) {
  if (ticket.url.rfind("wss://", 0) == 0) return ticket.url;
  if (ticket.ticket.empty()) return {};
  std::string host = ticket.host.empty() ? fallback_host : ticket.host;
  if (host.find(':') != std::string::npos && host.front() != '[') host = "[" + host + "]";
  const int port = ticket.port > 0 ? ticket.port : 443;
  return "wss://" + host + ":" + std::to_string(port) + "/ticket/" + ticket.ticket;
}

Status ConsoleOpener::open(const sdk::Call& call, const sdk::ConsoleRequest& request,
                           sdk::Reply& reply) {
  const std::string machine = machineName(request);
  if (request.console == "serial") {
    return {Code::kUnimplemented, "SerialConsoleUnavailable",
            "vSphere offers no serial stream for " + machine +
                " (without a network-backed serial port): its console is graphical, a WebMKS "
                "ticket; ask for its URL with `banlieue vm console NAME --url`"};
  }
  if (request.console != "webmks") {
    return {Code::kUnimplemented, "NotSupportedByBackend",
            "the vsphere provider has no '" + request.console + "' console (webmks is its one)"};
  }
  if (request.provider_id.empty()) {
    return {Code::kFailedPrecondition, "MachineNotProvisioned",
            machine + " has no VM yet (no spec.providerID); its console opens once provisioned"};
  }
  std::optional<std::string> uuid = instanceUuidOf(request.provider_id);
  if (!uuid) {
    return {Code::kInvalidArgument, "InvalidProviderID",
            "spec.providerID '" + request.provider_id + "' of " + machine +
                " is not vsphere://<instance UUID>"};
  }
  const Deadline deadline = call.deadline();
  const std::string what = "the webmks console of " + machine;
  return withVimErrors(what, [&]() -> Status {
    auto gone = [&] {
      return Status{
          Code::kNotFound, "VMNotFound",
          "the VM of " + machine + " (" + request.provider_id + ") no longer exists in vCenter"};
    };
    std::optional<MoRef> vm = vim_.findByInstanceUuid(*uuid, deadline);
    if (!vm) return gone();
    XmlWriter w;
    w.text("ticketType", "webmks");
    SoapResponse r;
    try {
      r = vim_.client().call("AcquireTicket", *vm, w.str(), deadline);
    } catch (const VimFault& fault) {
      if (fault.kind() == FaultKind::kManagedObjectNotFound) return gone();
      throw;
    }
    VmTicket ticket = parseVmTicket(r.returnval());
    std::string url = webMksUrl(ticket, vim_.client().url().host);
    // The response document holds the ticket too: blank it before it goes.
    for (pugi::xml_node n = r.returnval().first_child(); n; n = n.next_sibling()) {
      n.text().set("");
    }
    if (url.empty()) {
      return {Code::kUnavailable, "InvalidResponse",
              "vCenter answered AcquireTicket for " + machine + " without a ticket"};
    }
    auto& a = reply.allocator();
    auto& status = reply.status();
    status.AddMember("console", "webmks", a);
    status.AddMember("url", json::stringValue(url, a), a);
    status.AddMember("expiresInSeconds", kWebMksTicketSeconds, a);
    std::string description = "WebMKS console of the VM of " + machine;
    if (!ticket.host.empty()) description += " on ESXi host " + ticket.host;
    if (!ticket.ssl_thumbprint.empty()) {
      description += " (certificate SHA-1 thumbprint " + ticket.ssl_thumbprint + ")";
    }
    status.AddMember("description", json::stringValue(description, a), a);
    wipe(url);
    wipe(ticket.ticket);
    wipe(ticket.url);
    return Status::ok();
  });
}

}  // namespace banlieue::vsphere
