#include "plugins/libvirt/src/introspection.h"

#include "plugins/libvirt/src/domain_xml.h"
#include "plugins/libvirt/src/image_import.h"
#include "plugins/libvirt/src/libvirt_handles.h"

#include <cctype>

namespace banlieue::libvirt {

namespace json = sdk::json;
using sdk::Status;

std::string failureDomainName(std::string_view hostname) {
  std::string out;
  for (char c : hostname) {
    auto u = static_cast<unsigned char>(c);
    if (std::isalnum(u)) {
      out += static_cast<char>(std::tolower(u));
    } else if (!out.empty() && out.back() != '-') {
      out += '-';
    }
  }
  if (out.size() > 63) out.resize(63);
  while (!out.empty() && out.back() == '-') out.pop_back();
  return out.empty() ? "libvirt-host" : out;
}

namespace {

// Why a declared target cannot be used, or empty when it can.
std::string poolProblem(virConnectPtr conn, const std::string& pool) {
  auto p = findPool(conn, pool);
  if (!p) return "pool '" + pool + "' does not exist";
  if (virStoragePoolIsActive(p->get()) != 1) return "pool '" + pool + "' is not active";
  return {};
}

std::string networkProblem(virConnectPtr conn, const rapidjson::Value* target) {
  std::string network = json::stringOr(target, "network");
  std::string bridge = json::stringOr(target, "bridge");
  if (!network.empty()) {
    auto n = findNetwork(conn, network);
    if (!n) return "network '" + network + "' does not exist";
    if (virNetworkIsActive(n->get()) != 1) return "network '" + network + "' is not active";
    return {};
  }
  if (!bridge.empty()) {
    virInterfacePtr iface = virInterfaceLookupByName(conn, bridge.c_str());
    if (iface != nullptr) {
      int active = virInterfaceIsActive(iface);
      virInterfaceFree(iface);
      return active == 1 ? std::string() : "bridge '" + bridge + "' is not active";
    }
    LibvirtError e = LibvirtError::last();
    if (e.code == VIR_ERR_NO_INTERFACE) return "bridge '" + bridge + "' does not exist";
    // Hosts without libvirt's interface driver cannot answer; the bridge is checked when a
    // domain starts on it instead.
    return {};
  }
  return "no network or bridge target";
}

std::vector<std::string> hostFeatures(virConnectPtr conn, const std::string& caps) {
  std::vector<std::string> features;
  auto types = guestDomainTypes(caps, "x86_64");
  bool kvm = std::find(types.begin(), types.end(), "kvm") != types.end();
  if (kvm && hostCpuVirtualization(caps)) features.emplace_back("nestedVirtualization");
  CString domcaps(
      virConnectGetDomainCapabilities(conn, nullptr, "x86_64", nullptr, kvm ? "kvm" : "qemu", 0));
  if (domcaps) {
    const DomainCapabilities offered = readDomainCapabilities(domcaps.get());
    if (offered.tpm) features.emplace_back("vtpm");
    if (offered.efi && offered.secure_boot) features.emplace_back("efiSecureBoot");
  }
  return features;
}

}  // namespace

Status introspectHost(Connection& connection, const sdk::Call& call,
                      const rapidjson::Value* provider, sdk::Reply& reply,
                      std::string* failure_domain_out) {
  ConnRef conn(connection.acquire(call));
  CString hostname(virConnectGetHostname(conn.get()));
  if (!hostname) raiseLast("reading the host name");
  CString caps(virConnectGetCapabilities(conn.get()));
  if (!caps) raiseLast("reading host capabilities");
  std::string fd_name = failureDomainName(hostname.get());
  if (failure_domain_out != nullptr) *failure_domain_out = fd_name;

  auto& a = reply.allocator();
  rapidjson::Value storage(rapidjson::kArrayType);
  rapidjson::Value networks(rapidjson::kArrayType);
  rapidjson::Value raw(rapidjson::kObjectType);
  raw.AddMember("host", json::stringValue(hostname.get(), a), a);
  const char* type = virConnectGetType(conn.get());
  raw.AddMember("hypervisor", json::stringValue(type != nullptr ? type : "", a), a);
  unsigned long version = 0;  // NOLINT(google-runtime-int): libvirt's own type
  if (virConnectGetLibVersion(conn.get(), &version) == 0) {
    std::string v = std::to_string(version / 1000000) + "." +
                    std::to_string((version / 1000) % 1000) + "." + std::to_string(version % 1000);
    raw.AddMember("libvirtVersion", json::stringValue(v, a), a);
  }

  auto problem_event = [&](const std::string& cls, const std::string& problem) {
    std::string message = "class " + cls + " is unavailable on " + fd_name + ": " + problem;
    BANLIEUE_LOG(kWarn, message);
    call.event(BANLIEUE_EVENT_WARNING, "TargetUnavailable", message);
    raw.AddMember(json::stringValue("unavailable." + cls, a), json::stringValue(problem, a), a);
  };
  if (const auto* classes = json::find(provider, "spec.capabilities.storageClasses");
      classes != nullptr && classes->IsArray()) {
    for (const auto& c : classes->GetArray()) {
      std::string name = json::stringOr(&c, "name");
      std::string pool = json::stringOr(&c, "target.pool");
      std::string problem = pool.empty() ? "no pool target" : poolProblem(conn.get(), pool);
      if (problem.empty()) {
        storage.PushBack(json::stringValue(name, a), a);
      } else {
        problem_event(name, problem);
      }
    }
  }
  if (const auto* classes = json::find(provider, "spec.capabilities.networkClasses");
      classes != nullptr && classes->IsArray()) {
    for (const auto& c : classes->GetArray()) {
      std::string name = json::stringOr(&c, "name");
      std::string problem = networkProblem(conn.get(), json::member(&c, "target"));
      if (problem.empty()) {
        networks.PushBack(json::stringValue(name, a), a);
      } else {
        problem_event(name, problem);
      }
    }
  }

  std::vector<std::string> features = hostFeatures(conn.get(), caps.get());
  rapidjson::Value attributes(rapidjson::kObjectType);
  attributes.AddMember("availableStorageClasses", storage, a);
  attributes.AddMember("availableNetworkClasses", networks, a);
  attributes.AddMember("features", json::stringArray(features, a), a);
  attributes.AddMember("raw", raw, a);
  // One import per pool (docs/adr/0053): the host runs a Job per pool and keeps a row per pool.
  // Every declared pool, usable or not: an import into a missing one fails on its own row.
  if (auto pools = declaredPools(provider); !pools.empty()) {
    attributes.AddMember("importTargets", json::stringArray(pools, a), a);
  }
  rapidjson::Value labels(rapidjson::kObjectType);
  labels.AddMember("host", json::stringValue(hostname.get(), a), a);
  labels.AddMember("name", json::stringValue(fd_name, a), a);
  rapidjson::Value fd(rapidjson::kObjectType);
  fd.AddMember("name", json::stringValue(fd_name, a), a);
  fd.AddMember("labels", labels, a);
  fd.AddMember("attributes", attributes, a);
  rapidjson::Value fds(rapidjson::kArrayType);
  fds.PushBack(fd, a);
  reply.body().AddMember("failureDomains", fds, a);
  reply.body().AddMember("features", json::stringArray(features, a), a);
  return Status::ok();
}

}  // namespace banlieue::libvirt
