#include "plugins/proxmox/src/machine.h"

#include "plugins/proxmox/src/errors.h"
#include "plugins/proxmox/src/inventory.h"
#include "plugins/proxmox/src/specs.h"
#include "plugins/proxmox/src/task_token.h"
#include "plugins/proxmox/src/user_data.h"

#include <banlieue/sdk/restart.h>
#include <banlieue/sdk/text.h>
#include <banlieue/sdk/uri.h>

#include <algorithm>
#include <map>
#include <optional>
#include <random>
#include <set>
#include <sstream>
#include <thread>

namespace banlieue::proxmox {
namespace {

namespace json = sdk::json;
using sdk::Code;
using sdk::Status;

constexpr int kCloneAttempts = 6;
// A shutdown that PVE turns into a hard stop after this many seconds (forceStop=1).
constexpr int kShutdownTimeoutSeconds = 120;

std::string who(const sdk::ReconcileRequest& r) {
  return (r.namespace_.empty() ? std::string() : r.namespace_ + "/") + r.name;
}

// A task this call started: its UPID goes into the token under `phase`.
Status started(sdk::Reply& reply, const std::string& phase, const std::string& upid,
               const std::string& what) {
  return taskInProgress(reply, {phase, upid, upidNode(upid)}, what);
}

struct Guest {
  int64_t vmid = 0;
  std::string node;
  std::string name;
  std::string status;  // running | stopped
  std::string lock;
};

std::set<std::string> splitTags(const std::string& tags) {
  std::set<std::string> out;
  std::string item;
  for (char c : tags + ";") {
    if (c == ';' || c == ',' || c == ' ') {
      if (!item.empty()) out.insert(item);
      item.clear();
    } else {
      item += c;
    }
  }
  return out;
}

std::string ownerMarker(const std::string& uid) {
  return "banlieue-uid=" + sdk::asciiLower(uid);
}

// The guest of this object: the one tagged with its UID, or (a clone that has not been
// configured yet) the one with its name whose description carries the UID.
std::optional<Guest> findGuest(const PveClient& client, const sdk::ReconcileRequest& request,
                               Deadline deadline) {
  rapidjson::Document all = listGuests(client, deadline);
  const std::string tag = ownerTag(request.uid);
  std::vector<Guest> by_name;
  for (const auto& entry : all.GetArray()) {
    if (json::stringOr(&entry, "type", "qemu") != "qemu") continue;
    if (asInt(json::member(&entry, "template")) != 0) continue;
    Guest g;
    g.vmid = asInt(json::member(&entry, "vmid"));
    g.node = json::stringOr(&entry, "node");
    g.name = json::stringOr(&entry, "name");
    g.status = json::stringOr(&entry, "status");
    g.lock = json::stringOr(&entry, "lock");
    if (splitTags(json::stringOr(&entry, "tags")).count(tag) != 0) return g;
    if (g.name == request.name) by_name.push_back(g);
  }
  for (const Guest& g : by_name) {
    rapidjson::Document config = client.get(
        "/nodes/" + sdk::pathSegment(g.node) + "/qemu/" + std::to_string(g.vmid) + "/config",
        deadline);
    if (json::stringOr(&config, "description").find(ownerMarker(request.uid)) !=
        std::string::npos) {
      return g;
    }
  }
  return std::nullopt;
}

std::string vmPath(const Guest& g) {
  return "/nodes/" + sdk::pathSegment(g.node) + "/qemu/" + std::to_string(g.vmid);
}

// "virtio=BC:24:11:00:00:01,bridge=vmbr0,tag=20" -> {"model": "virtio", "mac": ..., ...}
std::map<std::string, std::string> parseNet(const std::string& value) {
  std::map<std::string, std::string> out;
  std::stringstream in(value);
  std::string part;
  bool first = true;
  while (std::getline(in, part, ',')) {
    auto eq = part.find('=');
    std::string key = part.substr(0, eq);
    std::string val = eq == std::string::npos ? "" : part.substr(eq + 1);
    if (first) {
      out["model"] = key;
      out["mac"] = val;
      first = false;
    } else {
      out[key] = val;
    }
  }
  return out;
}

// The size in GiB of a disk value ("local-lvm:vm-100-disk-0,size=10G"), 0 when unknown.
int64_t diskGiB(const std::string& value) {
  auto at = value.find("size=");
  if (at == std::string::npos) return 0;
  std::string size = value.substr(at + 5, value.find(',', at) - at - 5);
  if (size.empty()) return 0;
  char unit = size.back();
  int64_t n = 0;
  try {
    n = std::stoll(size);
  } catch (const std::exception&) {
    return 0;
  }
  if (unit == 'T') return n * 1024;
  if (unit == 'M') return n / 1024;
  if (unit == 'K') return n / (int64_t{1024} * 1024);
  return n;
}

std::string configString(const rapidjson::Value& config, const std::string& key) {
  return asString(json::member(&config, key));
}

// The config keys that differ from the spec, as PVE parameters.
Form configChanges(const MachineSpec& spec, const sdk::ReconcileRequest& request,
                   const rapidjson::Value& config) {
  Form changes;
  auto want = [&](const std::string& key, const std::string& value) {
    if (configString(config, key) != value) changes.emplace_back(key, value);
  };
  want("cores", std::to_string(spec.cores));
  want("sockets", "1");
  want("memory", std::to_string(spec.memory_mib));
  want("bios", spec.firmware == "efi" ? "ovmf" : "seabios");
  want("agent", "1");
  // PVE keeps the other tags an admin adds; ours is added, never the whole list replaced.
  std::set<std::string> tags = splitTags(configString(config, "tags"));
  if (tags.insert(ownerTag(request.uid)).second) {
    std::string joined;
    for (const auto& t : tags) joined += (joined.empty() ? "" : ";") + t;
    changes.emplace_back("tags", joined);
  }
  std::string nameservers;
  for (size_t i = 0; i < spec.network.size(); ++i) {
    const Nic& nic = spec.network[i];
    const std::string key = "net" + std::to_string(i);
    auto current = parseNet(configString(config, key));
    std::string mac = !nic.mac_address.empty() ? nic.mac_address : current["mac"];
    std::string value = nic.model + (mac.empty() ? "" : "=" + mac) + ",bridge=" + nic.bridge;
    if (nic.vlan) value += ",tag=" + std::to_string(*nic.vlan);
    bool same = current["model"] == nic.model && current["bridge"] == nic.bridge &&
                current["tag"] == (nic.vlan ? std::to_string(*nic.vlan) : "") &&
                (nic.mac_address.empty() ||
                 sdk::asciiLower(current["mac"]) == sdk::asciiLower(nic.mac_address));
    if (!same) changes.emplace_back(key, value);
    std::string ip = "ip=dhcp";
    if (nic.static_ip) {
      ip = "ip=" + nic.static_ip->address + "/" + std::to_string(nic.static_ip->prefix);
      if (!nic.static_ip->gateway.empty()) ip += ",gw=" + nic.static_ip->gateway;
      for (const auto& ns : nic.static_ip->nameservers) {
        nameservers += (nameservers.empty() ? "" : " ") + ns;
      }
    }
    want("ipconfig" + std::to_string(i), ip);
  }
  if (!nameservers.empty()) want("nameserver", nameservers);
  // NICs of the template beyond the spec's list are removed.
  std::string remove;
  for (size_t i = spec.network.size(); i < 32; ++i) {
    if (!configString(config, "net" + std::to_string(i)).empty()) {
      remove += (remove.empty() ? "" : ",") + ("net" + std::to_string(i));
    }
  }
  if (!remove.empty()) changes.emplace_back("delete", remove);
  // The cloud-init drive: on the seed-iso storage when the controller chose one.
  if (configString(config, "ide2").find("cloudinit") == std::string::npos) {
    changes.emplace_back(
        "ide2",
        (spec.seed_iso_storage.empty() ? spec.storage : spec.seed_iso_storage) + ":cloudinit");
  }
  for (size_t i = 0; i < spec.data_disks.size(); ++i) {
    const std::string key = "scsi" + std::to_string(i + 1);
    if (configString(config, key).empty()) {
      changes.emplace_back(
          key, spec.data_disks[i].storage + ":" + std::to_string(spec.data_disks[i].size_gib));
    }
  }
  if (spec.tpm_enabled && configString(config, "tpmstate0").empty()) {
    changes.emplace_back("tpmstate0", spec.storage + ":1,version=v2.0");
  }
  if (spec.firmware == "efi" && configString(config, "efidisk0").empty()) {
    changes.emplace_back("efidisk0", spec.storage + ":1,efitype=4m");
  }
  return changes;
}

// A guest's configuration as PVE will boot it (its pending changes applied, as GET /config
// answers), and the keys whose change waits for that boot: a running guest takes at once only
// what PVE can hot-plug (disks and NICs by default); CPUs, memory, firmware and cloud-init
// settings stay pending. One GET /pending gives both.
struct GuestConfig {
  rapidjson::Document effective{rapidjson::kObjectType};
  std::vector<std::string> pending_keys;
};

GuestConfig readConfig(const PveClient& client, const Guest& g, Deadline deadline) {
  rapidjson::Document entries = client.get(vmPath(g) + "/pending", deadline);
  if (!entries.IsArray()) {
    throw sdk::Error(Code::kUnavailable, "MalformedReply",
                     "GET " + vmPath(g) + "/pending answered " +
                         json::serialize(entries).substr(0, 200) + " instead of a list of options");
  }
  GuestConfig out;
  auto& a = out.effective.GetAllocator();
  for (const auto& entry : entries.GetArray()) {
    const std::string key = json::stringOr(&entry, "key");
    if (key.empty()) continue;
    const rapidjson::Value* pending = json::member(&entry, "pending");
    const rapidjson::Value* current = json::member(&entry, "value");
    const bool deleted = asInt(json::member(&entry, "delete")) != 0;
    if (pending != nullptr || deleted) out.pending_keys.push_back(key);
    if (deleted) continue;
    const rapidjson::Value* value = pending != nullptr ? pending : current;
    if (value != nullptr) {
      out.effective.AddMember(json::stringValue(key, a), rapidjson::Value(*value, a), a);
    }
  }
  return out;
}

std::string joined(const std::vector<std::string>& items) {
  std::string out;
  for (const auto& item : items) out += (out.empty() ? "" : ", ") + item;
  return out;
}

std::string observedPower(const PveClient& client, const Guest& g, Deadline deadline) {
  rapidjson::Document current = client.get(vmPath(g) + "/status/current", deadline);
  const std::string status = json::stringOr(&current, "status");
  if (status == "running") {
    return json::stringOr(&current, "qmpstatus") == "paused" ? "Suspended" : "PoweredOn";
  }
  return "PoweredOff";
}

// What the guest's QEMU agent says through PVE: whether it answered (the guest's readiness)
// and the guest's addresses.
struct GuestAgentView {
  bool answered = false;
  std::vector<std::string> addresses;
};

GuestAgentView askGuestAgent(const PveClient& client, const Guest& g, Deadline deadline) {
  GuestAgentView view;
  std::vector<std::string>& out = view.addresses;
  rapidjson::Document data;
  try {
    data = client.get(vmPath(g) + "/agent/network-get-interfaces", deadline);
  } catch (const PveError&) {
    return view;  // no guest agent (yet): addresses appear once it runs
  }
  view.answered = true;
  const rapidjson::Value* result = json::member(&data, "result");
  if (result == nullptr || !result->IsArray()) return view;
  for (const auto& iface : result->GetArray()) {
    if (json::stringOr(&iface, "name") == "lo") continue;
    const rapidjson::Value* ips = json::member(&iface, "ip-addresses");
    if (ips == nullptr || !ips->IsArray()) continue;
    for (const auto& ip : ips->GetArray()) {
      std::string address = json::stringOr(&ip, "ip-address");
      if (address.empty() || address.rfind("127.", 0) == 0 || address.rfind("fe80:", 0) == 0 ||
          address == "::1") {
        continue;
      }
      out.push_back(address);
    }
  }
  return view;
}

// The guest's own signal, which a pool with readiness GuestReady waits for: its QEMU guest
// agent answering. `agent` is absent while the power state is changing.
void setGuestReady(sdk::Reply& reply, const std::string& power,
                   const std::optional<GuestAgentView>& agent) {
  if (power != "PoweredOn") {
    reply.setCondition("GuestReady", "False", "NotRunning", "the VM is not running");
  } else if (!agent) {
    reply.setCondition("GuestReady", "False", "PowerChanging",
                       "the VM is being restarted, stopped or suspended");
  } else if (agent->answered) {
    reply.setCondition("GuestReady", "True", "GuestAgentResponding", "the guest agent answers");
  } else {
    reply.setCondition("GuestReady", "False", "GuestAgentNotResponding",
                       "the QEMU guest agent does not answer through PVE: the guest is still "
                       "booting, or its image has no qemu-guest-agent");
  }
}

void writeStatus(sdk::Reply& reply, const MachineSpec& spec, const Guest& g,
                 const std::string& power, const std::vector<std::string>& addresses,
                 bool provisioned) {
  auto& a = reply.allocator();
  auto& status = reply.status();
  status.RemoveAllMembers();
  status.AddMember("vmid", g.vmid, a);
  status.AddMember("node", json::stringValue(g.node, a), a);
  status.AddMember("providerID", json::stringValue(providerId(g.node, g.vmid), a), a);
  if (!spec.failure_domain.empty()) {
    status.AddMember("failureDomain", json::stringValue(spec.failure_domain, a), a);
  }
  if (!power.empty()) status.AddMember("observedPowerState", json::stringValue(power, a), a);
  rapidjson::Value init(rapidjson::kObjectType);
  init.AddMember("provisioned", provisioned, a);
  status.AddMember("initialization", init, a);
  rapidjson::Value list(rapidjson::kArrayType);
  for (const auto& ip : addresses) {
    rapidjson::Value entry(rapidjson::kObjectType);
    entry.AddMember("type", "InternalIP", a);
    entry.AddMember("address", json::stringValue(ip, a), a);
    list.PushBack(entry, a);
  }
  status.AddMember("addresses", list, a);
}

// Clones the template onto spec.node after checking the node, storage and bridges, with a
// fresh VMID per attempt. Parallel clones of one template collide on PVE's config and storage
// locks; those are retried with jittered backoff inside the call, then handed back to the host
// as IN_PROGRESS/StorageLocked so it calls again.
Status clone(const PveClient& client, const MachineSpec& spec, const sdk::ReconcileRequest& request,
             Deadline deadline, sdk::Reply& reply) {
  const std::string name = who(request);
  std::vector<NodeInfo> nodes = listNodes(client, deadline);
  auto node = std::find_if(nodes.begin(), nodes.end(),
                           [&](const NodeInfo& n) { return n.name == spec.node; });
  if (node == nodes.end()) {
    return {Code::kNotFound, "NodeNotFound",
            "node '" + spec.node + "' of " + name + " is not a member of the PVE cluster"};
  }
  if (!node->online) {
    reply.requeueAfter(std::chrono::seconds(30));
    return {Code::kUnavailable, "NodeOffline",
            "node '" + spec.node + "' of " + name + " is offline; the clone waits for it"};
  }
  loadNodeDetails(client, *node, deadline);
  auto storage = node->storages.find(spec.storage);
  if (storage == node->storages.end() || storage->second.count("images") == 0) {
    return {Code::kFailedPrecondition, "StorageNotFound",
            "storage '" + spec.storage + "' does not exist on node '" + spec.node +
                "' or does not hold disk images (spec.storage of " + name + ")"};
  }
  for (size_t i = 0; i < spec.network.size(); ++i) {
    if (node->bridges.count(spec.network[i].bridge) == 0) {
      return {Code::kFailedPrecondition, "BridgeNotFound",
              "bridge '" + spec.network[i].bridge + "' (spec.network[" + std::to_string(i) +
                  "]) does not exist on node '" + spec.node + "'"};
    }
  }
  // The template may live on another node (shared storage): clone there, target ours.
  std::string template_node;
  rapidjson::Document all = listGuests(client, deadline);
  for (const auto& entry : all.GetArray()) {
    if (asInt(json::member(&entry, "vmid")) != spec.template_vmid) continue;
    if (json::stringOr(&entry, "node") == spec.node || template_node.empty()) {
      template_node = json::stringOr(&entry, "node");
    }
  }
  if (template_node.empty()) {
    return {Code::kNotFound, "TemplateNotFound",
            "template VMID " + std::to_string(spec.template_vmid) + " of " + name +
                " does not exist in the PVE cluster"};
  }

  std::mt19937 random(std::random_device{}());
  std::chrono::milliseconds backoff{150};
  std::string last;
  for (int attempt = 0; attempt < kCloneAttempts; ++attempt) {
    rapidjson::Document nextid = client.get("/cluster/nextid", deadline);
    const std::string newid = asString(&nextid);
    Form form{
        {"newid", newid},
        {"name", request.name},
        {"full", spec.linked_clone ? "0" : "1"},
        {"description", "Managed by banlieue for " + name + " (" + ownerMarker(request.uid) + ")"}};
    // PVE refuses a target storage for linked clones: their disks stay beside the template's.
    if (!spec.linked_clone) form.emplace_back("storage", spec.storage);
    if (template_node != spec.node) form.emplace_back("target", spec.node);
    try {
      rapidjson::Document upid =
          client.post("/nodes/" + sdk::pathSegment(template_node) + "/qemu/" +
                          std::to_string(spec.template_vmid) + "/clone",
                      form, deadline);
      auto& a = reply.allocator();
      reply.status().AddMember("vmid", asInt(&nextid), a);
      reply.status().AddMember("node", json::stringValue(spec.node, a), a);
      if (!spec.failure_domain.empty()) {
        reply.status().AddMember("failureDomain", json::stringValue(spec.failure_domain, a), a);
      }
      std::string what = "clone of " + name;
      what += " as VMID " + newid;
      what += std::string(spec.linked_clone ? " (linked)" : "") + " from template " +
              std::to_string(spec.template_vmid);
      if (!spec.linked_clone) what += " onto " + spec.storage;
      return started(reply, "clone", asString(&upid), what);
    } catch (const PveError& e) {
      if (!e.isLockTimeout() && !e.isVmidTaken()) throw;
      // Another client took that VMID, or holds the template's lock: ask again after a
      // jittered back-off (retrying at once, parallel clones asked for the same VMIDs in
      // lockstep and ran out of attempts: a flake seen in CI).
      last = e.message();
    }
    auto jitter = std::chrono::milliseconds(random() % static_cast<unsigned>(backoff.count()));
    if (std::chrono::steady_clock::now() + backoff + jitter >= deadline) break;
    std::this_thread::sleep_for(backoff + jitter);
    backoff *= 2;
  }
  if (last.find("already exists") != std::string::npos) {
    return {Code::kAlreadyExists, "VmidCollision",
            "every VMID PVE offered for " + name + " was taken: " + last};
  }
  reply.setOperation("retry-clone", "waiting for a storage lock");
  reply.requeueAfter(std::chrono::seconds(1));
  return Status::inProgress("StorageLocked", "clone of " + name + " waits for a lock: " + last);
}

}  // namespace

std::string ownerTag(const std::string& uid) {
  return "banlieue-" + sdk::asciiLower(uid);
}

bool taggedFor(const std::string& tags, const std::string& uid) {
  return splitTags(tags).count(ownerTag(uid)) != 0;
}

std::string providerId(const std::string& node, int64_t vmid) {
  return "proxmox://" + node + "/" + std::to_string(vmid);
}

std::optional<GuestRef> parseProviderId(std::string_view provider_id) {
  constexpr std::string_view kScheme = "proxmox://";
  if (provider_id.substr(0, kScheme.size()) != kScheme) return std::nullopt;
  const std::string_view rest = provider_id.substr(kScheme.size());
  const auto slash = rest.find('/');
  if (slash == 0 || slash == std::string_view::npos) return std::nullopt;
  const std::string_view vmid = rest.substr(slash + 1);
  // PVE's VMIDs: 100 to 999999999.
  if (vmid.size() < 3 || vmid.size() > 9 || vmid.front() == '0' ||
      !std::all_of(vmid.begin(), vmid.end(), [](char c) { return c >= '0' && c <= '9'; })) {
    return std::nullopt;
  }
  return GuestRef{std::string(rest.substr(0, slash)), std::stoll(std::string(vmid))};
}

// Every guest and template of the cluster. Anything but a list says nothing about which guests
// exist, so it is an error: read as "none", it would clone a second VM or release the finalizer
// of a VM that still runs.
rapidjson::Document listGuests(const PveClient& client, Deadline deadline) {
  rapidjson::Document all = client.get("/cluster/resources?type=vm", deadline);
  if (!all.IsArray()) {
    throw sdk::Error(Code::kUnavailable, "MalformedReply",
                     "GET /cluster/resources?type=vm answered " +
                         json::serialize(all).substr(0, 200) + " instead of a list of guests");
  }
  return all;
}

Status MachineReconciler::reconcile(const sdk::Call& call, const sdk::ReconcileRequest& request,
                                    sdk::Reply& reply) {
  const std::string name = who(request);
  const Deadline deadline = call.deadline();
  return withPveErrors("reconcile of ProxmoxMachine " + name, [&]() -> Status {
    if (request.uid.empty()) throw std::invalid_argument("metadata.uid is required");
    const MachineSpec spec = MachineSpec::parse(request.spec);
    if (auto pending = parseTaskToken(request.operation_token)) {
      if (auto stop =
              awaitTask(client_, *pending, pending->phase + " of " + name, deadline, reply)) {
        return *stop;
      }
    } else {
      endTask(reply);
    }
    if (call.cancelled()) {
      return {Code::kCancelled, "Cancelled", "reconcile of " + name + " was cancelled"};
    }
    std::optional<Guest> guest = findGuest(client_, request, deadline);
    if (!guest && json::boolean(request.status, "initialization.provisioned")) {
      // Never recreate behind the user's back: the guest that vanished may hold data someone
      // wants to recover; deleting the ProxmoxMachine makes a fresh one.
      const int64_t vmid = json::integer(request.status, "vmid").value_or(0);
      return {Code::kFailedPrecondition, "BackendMissing",
              "VM " + (vmid > 0 ? std::to_string(vmid) + " " : std::string()) + "of " + name +
                  " no longer exists in the PVE cluster; delete the ProxmoxMachine to recreate "
                  "it"};
    }
    if (!guest) return clone(client_, spec, request, deadline, reply);
    if (!guest->lock.empty()) {
      // A clone whose token was lost, or an admin's backup: wait for PVE to release it.
      reply.requeueAfter(kTaskPoll);
      reply.setOperation("locked", "VM is locked (" + guest->lock + ")");
      return Status::inProgress("Locked", "VM " + std::to_string(guest->vmid) + " of " + name +
                                              " is locked (" + guest->lock + ")");
    }
    std::string power = observedPower(client_, *guest, deadline);
    GuestConfig read = readConfig(client_, *guest, deadline);
    const rapidjson::Document& config = read.effective;
    Form changes = configChanges(spec, request, config);
    bool changed = !changes.empty();  // by this pass: the next one confirms it took
    if (!changes.empty()) {
      client_.put(vmPath(*guest) + "/config", changes, deadline);
      if (power != "PoweredOff") read = readConfig(client_, *guest, deadline);  // what went pending
      if (power == "PoweredOff") {
        // Peers shipped VMs that booted with the template's 1 vCPU / 512 MiB because the
        // config never landed: read it back before starting.
        rapidjson::Document check = client_.get(vmPath(*guest) + "/config", deadline);
        if (asInt(json::member(&check, "cores")) != spec.cores ||
            asInt(json::member(&check, "memory")) != spec.memory_mib) {
          return {Code::kInternal, "ConfigNotApplied",
                  "PVE accepted the config of VM " + std::to_string(guest->vmid) +
                      " but still reports cores=" + configString(check, "cores") +
                      " memory=" + configString(check, "memory")};
        }
      }
    }
    if (spec.os_disk_size_gib) {
      int64_t current = diskGiB(configString(config, "scsi0"));
      if (current > 0 && current < *spec.os_disk_size_gib) {
        changed = true;
        client_.put(vmPath(*guest) + "/resize",
                    {{"disk", "scsi0"}, {"size", std::to_string(*spec.os_disk_size_gib) + "G"}},
                    deadline);
      }
    }
    if (!spec.user_data.empty()) {
      // Before the first start: cloud-init reads the drive once, at first boot.
      changed |=
          deliverUserData(client_, files_, {guest->node, vmPath(*guest), request.uid},
                          spec.user_data, {spec.seed_iso_storage, spec.storage}, config, deadline);
    }
    const std::string& desired = spec.desired_power_state;
    const std::string restart = sdk::unansweredRestart(request);
    const bool running = power == "PoweredOn" && desired == "PoweredOn";
    // spec.resizePolicy WaitForRestart: pending changes wait for the user's restart request.
    const bool held =
        !read.pending_keys.empty() && restart.empty() && sdk::waitsForRestart(request);
    if (running && ((!read.pending_keys.empty() && !held) || !restart.empty())) {
      // A restart request, or a guest that runs an older shape than its configuration: reboot
      // it (a shutdown within the timeout, then a start), which also applies pending changes.
      // The answer to the request goes with the token, in one status write; pending changes
      // are found again by a provider that dies meanwhile.
      const std::string what = joined(read.pending_keys);
      rapidjson::Document upid =
          client_.post(vmPath(*guest) + "/status/reboot",
                       {{"timeout", std::to_string(kShutdownTimeoutSeconds)}}, deadline);
      writeStatus(reply, spec, *guest, power, {}, true);
      setGuestReady(reply, power, std::nullopt);
      Status rebooting = started(
          reply, "reboot", asString(&upid),
          "reboot of " + name + " (VM " + std::to_string(guest->vmid) + ")" +
              (restart.empty() ? "" : " as requested at " + restart) +
              (what.empty() ? "" : (restart.empty() ? " to apply " : ", applying ") + what));
      if (!restart.empty()) sdk::answerRestart(reply, restart, true);
      if (!what.empty()) {
        reply.setCondition("HardwareApplied", "False", "RestartingToApply",
                           "the running guest lacks the pending " + what +
                               " (PVE applies them at boot); the VM reboots to apply them");
      }
      return rebooting;
    }
    // A restart request for a guest that is not running (or is being stopped) is answered
    // NotRunning: there is nothing to restart.
    auto answer_idle = [&] {
      if (!restart.empty()) sdk::answerRestart(reply, restart, false);
    };
    if (power != desired) {
      std::string action;
      Form form;
      if (desired == "PoweredOn") {
        action = power == "Suspended" ? "resume" : "start";
      } else if (desired == "PoweredOff") {
        action = "shutdown";
        form = {{"timeout", std::to_string(kShutdownTimeoutSeconds)}, {"forceStop", "1"}};
      } else {
        action = power == "PoweredOff" ? "start" : "suspend";  // suspend only from running
      }
      rapidjson::Document upid = client_.post(vmPath(*guest) + "/status/" + action, form, deadline);
      writeStatus(reply, spec, *guest, power, {}, true);
      setGuestReady(reply, power, std::nullopt);
      answer_idle();
      return started(reply, action, asString(&upid),
                     action + " of " + name + " (VM " + std::to_string(guest->vmid) + ")");
    }
    std::optional<GuestAgentView> agent;
    if (power == "PoweredOn") agent = askGuestAgent(client_, *guest, deadline);
    writeStatus(reply, spec, *guest, power, agent ? agent->addresses : std::vector<std::string>{},
                true);
    setGuestReady(reply, power, agent);
    answer_idle();
    if (power == "PoweredOn" && held) {
      reply.setCondition("HardwareApplied", "False", "RestartRequired",
                         "the running guest lacks the pending " + joined(read.pending_keys) +
                             "; they apply at the next restart (spec.resizePolicy "
                             "WaitForRestart: banlieue vm restart)");
    } else if (power == "PoweredOn" || read.pending_keys.empty()) {
      reply.setCondition("HardwareApplied", "True", "Applied",
                         "the VM has the spec's CPUs, memory, disks and NICs");
    } else {
      reply.setCondition("HardwareApplied", "True", "AppliedAtNextStart",
                         "the VM is not running; PVE applies the pending " +
                             joined(read.pending_keys) + " when it starts");
    }
    if (atRest({.carried_token = request.operation_token.has_value(),
                .changed_config = changed,
                .pending_config = !read.pending_keys.empty(),
                .power_as_desired = power == desired,
                .powered_on = power == "PoweredOn",
                .agent_answered = agent && agent->answered,
                .has_addresses = agent && !agent->addresses.empty()})) {
      reply.settle();
    }
    return Status::ok();
  });
}

bool atRest(const PassSummary& pass) {
  return !pass.carried_token && !pass.changed_config && !pass.pending_config &&
         pass.power_as_desired && (!pass.powered_on || (pass.agent_answered && pass.has_addresses));
}

Status MachineReconciler::finalize(const sdk::Call& call, const sdk::ReconcileRequest& request,
                                   sdk::Reply& reply) {
  const std::string name = who(request);
  const Deadline deadline = call.deadline();
  return withPveErrors("deletion of ProxmoxMachine " + name, [&]() -> Status {
    if (request.uid.empty()) throw std::invalid_argument("metadata.uid is required");
    if (auto pending = parseTaskToken(request.operation_token)) {
      if (auto stop =
              awaitTask(client_, *pending, pending->phase + " of " + name, deadline, reply)) {
        // A failed stop (it stopped meanwhile) is re-derived below; a failed destroy is not.
        if (stop->code() == Code::kInProgress || pending->phase == "destroy") return *stop;
      }
    } else {
      endTask(reply);
    }
    std::optional<Guest> guest = findGuest(client_, request, deadline);
    if (!guest) {
      endTask(reply);
      return Status::ok();  // never created or gone: deletion is confirmed by PVE's own list
    }
    if (!guest->lock.empty() && guest->lock != "destroyed") {
      reply.setOperation("locked", "VM is locked (" + guest->lock + ")");
      reply.requeueAfter(kTaskPoll);
      return Status::inProgress("Locked", "VM " + std::to_string(guest->vmid) + " of " + name +
                                              " is locked (" + guest->lock + ")");
    }
    if (guest->status != "stopped") {
      // A hard stop: the object is being deleted, nothing in the guest is worth waiting for.
      rapidjson::Document upid = client_.post(vmPath(*guest) + "/status/stop", {}, deadline);
      return started(reply, "stop", asString(&upid), "stop of " + name + " before deletion");
    }
    // The snippet is named only in the guest's config: removed while that still exists.
    rapidjson::Document config = client_.get(vmPath(*guest) + "/config", deadline);
    removeUserData(files_, {guest->node, vmPath(*guest), request.uid}, config, deadline);
    rapidjson::Document upid =
        client_.del(vmPath(*guest) + "?purge=1&destroy-unreferenced-disks=1", deadline);
    return started(reply, "destroy", asString(&upid),
                   "destruction of " + name + " (VM " + std::to_string(guest->vmid) + ")");
  });
}

}  // namespace banlieue::proxmox
