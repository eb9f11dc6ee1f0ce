// Every custom resource codec (host/api): the same bytes decoded as each of the 14 kinds, as the
// informers decode the objects the API server sends. Any bytes must give an object or an error
// Status naming the field, never a crash. Property: an accepted object survives an encode and
// decode unchanged (toJson(fromJson(toJson(x))) == toJson(x)), so a status written back is
// the status read.
#include "host/api/codec.h"
#include "host/api/libvirt.h"
#include "host/api/provider.h"
#include "host/api/proxmox.h"
#include "host/api/virtual_machine.h"
#include "host/api/vm_class.h"
#include "host/api/vsphere.h"

#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <string>
#include <string_view>

namespace {

template <class T>
void roundTrip(std::string_view text, const char* kind) {
  auto decoded = banlieue::api::fromJson<T>(text);
  if (!decoded.ok()) return;
  const std::string once = banlieue::api::toJson(*decoded);
  auto again = banlieue::api::fromJson<T>(once);
  if (!again.ok()) {
    std::fprintf(stderr, "%s: its own encoding does not decode: %s\n%s\n", kind,
                 again.status().message().c_str(), once.c_str());
    std::abort();
  }
  const std::string twice = banlieue::api::toJson(*again);
  if (twice != once) {
    std::fprintf(stderr, "%s: encoding is not stable:\n%s\n%s\n", kind, once.c_str(),
                 twice.c_str());
    std::abort();
  }
}

}  // namespace

// NOLINTNEXTLINE(readability-identifier-naming): libFuzzer's entry point
extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  using namespace banlieue::api;
  std::string_view text(reinterpret_cast<const char*>(data), size);
  roundTrip<VirtualMachine>(text, "VirtualMachine");
  roundTrip<VirtualMachinePool>(text, "VirtualMachinePool");
  roundTrip<VirtualMachineClaim>(text, "VirtualMachineClaim");
  roundTrip<VMClass>(text, "VMClass");
  roundTrip<VMImage>(text, "VMImage");
  roundTrip<Provider>(text, "Provider");
  roundTrip<ProviderClass>(text, "ProviderClass");
  roundTrip<VSphereMachine>(text, "VSphereMachine");
  roundTrip<VSphereMachineTemplate>(text, "VSphereMachineTemplate");
  roundTrip<VSphereCluster>(text, "VSphereCluster");
  roundTrip<LibvirtMachine>(text, "LibvirtMachine");
  roundTrip<LibvirtMachineTemplate>(text, "LibvirtMachineTemplate");
  roundTrip<ProxmoxMachine>(text, "ProxmoxMachine");
  roundTrip<ProxmoxMachineTemplate>(text, "ProxmoxMachineTemplate");
  return 0;
}
