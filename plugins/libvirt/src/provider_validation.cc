#include "plugins/libvirt/src/provider_validation.h"

#include "plugins/libvirt/src/connection.h"
#include "plugins/libvirt/src/machine_spec.h"

namespace banlieue::libvirt {

namespace json = sdk::json;
using sdk::Code;
using sdk::Status;

Status validateObject(const sdk::ValidateRequest& request) {
  if (request.kind == "Provider") {
    std::string endpoint = json::stringOr(request.object, "spec.connection.endpoint");
    if (endpoint.empty()) {
      return {Code::kInvalidArgument, "MissingEndpoint", "spec.connection.endpoint is required"};
    }
    (void)parseUri(endpoint);  // throws INVALID_ARGUMENT naming the problem
    return Status::ok();
  }
  if (request.kind != kMachineKind) {
    return {Code::kInvalidArgument, "UnsupportedKind",
            "the libvirt provider validates LibvirtMachine and Provider, not " + request.kind};
  }
  if (request.operation == "DELETE") return Status::ok();
  MachineSpec next = parseMachine(*request.object);
  if (request.operation != "UPDATE" || request.old_object == nullptr) return Status::ok();
  MachineSpec prev = parseMachine(*request.old_object);
  auto immutable = [](const char* field) {
    return Status(Code::kInvalidArgument, "ImmutableField",
                  std::string("LibvirtMachine spec.") + field + " cannot change after creation");
  };
  if (next.domain_name != prev.domain_name) return immutable("domainName");
  if (next.pool != prev.pool) return immutable("pool");
  if (next.boot_kind != prev.boot_kind || next.boot_volume != prev.boot_volume) {
    return immutable("bootSource");
  }
  for (const auto& disk : next.disks) {
    for (const auto& old : prev.disks) {
      if (disk.name == old.name && disk.size_gib < old.size_gib) {
        return {Code::kInvalidArgument, "DiskShrink",
                "LibvirtMachine disk " + disk.name + " cannot shrink from " +
                    std::to_string(old.size_gib) + " to " + std::to_string(disk.size_gib) + " GiB"};
      }
    }
  }
  return Status::ok();
}

}  // namespace banlieue::libvirt
