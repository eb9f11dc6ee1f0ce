#include "plugins/vsphere/src/machine.h"

#include "plugins/vsphere/src/errors.h"
#include "plugins/vsphere/src/inventory.h"
#include "plugins/vsphere/src/machine_spec.h"
#include "plugins/vsphere/src/task_poll.h"

#include <banlieue/sdk/json.h>
#include <banlieue/sdk/restart.h>

#include <algorithm>

namespace banlieue::vsphere {
namespace {

namespace json = sdk::json;
using sdk::Code;
using sdk::Status;

constexpr std::chrono::milliseconds kTaskPoll{2000};

std::string lowerUuid(std::string uid) {
  std::transform(uid.begin(), uid.end(), uid.begin(),
                 [](unsigned char c) { return static_cast<char>(std::tolower(c)); });
  return uid;
}

bool isUuid(const std::string& s) {
  if (s.size() != 36) return false;
  for (size_t i = 0; i < s.size(); ++i) {
    bool dash = i == 8 || i == 13 || i == 18 || i == 23;
    if (dash != (s[i] == '-')) return false;
    if (!dash && !std::isxdigit(static_cast<unsigned char>(s[i]))) return false;
  }
  return true;
}

std::string objectName(const sdk::ReconcileRequest& r) {
  return (r.namespace_.empty() ? std::string() : r.namespace_ + "/") + r.name;
}

// Checked before a step starts a backend task; a task already started is polled on the next
// call through its token, so stopping here loses nothing.
Status cancelled(const std::string& who) {
  return {Code::kCancelled, "Cancelled", "reconcile of " + who + " was cancelled by the host"};
}

Status started(sdk::Reply& reply, const std::string& phase, const MoRef& task,
               const std::string& what) {
  return taskInProgress(reply, {phase, task}, "TaskRunning", what, kTaskPoll);
}

// The clone vCenter is still making for a machine named `name`, when the operation token that
// named its task was lost (the provider killed after CloneVM_Task returned, a status write
// that failed): until the clone completes the VM is not in the inventory, so the lookup by
// instance UUID cannot see it, and a second clone (or a deletion reported done) would follow.
// A clone in flight is a queued or running "VirtualMachine.clone" task of
// TaskManager.recentTask; the VmBeingClonedEvent it posted when it started (same event chain)
// names what it makes. Two round trips; the second only while some clone is in flight. A
// same-named machine's clone in another folder is adopted too: the caller only waits for it
// and then looks its own VM up by instance UUID again, so the cost is a wait, never a wrong VM.
std::optional<MoRef> cloneInFlight(Vim& vim, const std::string& name, Deadline deadline) {
  std::vector<RecentTask> clones;
  for (auto& task : vim.recentTasks(deadline)) {
    if (task.description_id == "VirtualMachine.clone" && task.event_chain_id != 0 &&
        (task.state == TaskState::kQueued || task.state == TaskState::kRunning)) {
      clones.push_back(std::move(task));
    }
  }
  if (clones.empty()) return std::nullopt;
  for (const auto& started : vim.clonesStarted(deadline)) {
    if (started.dest_name != name) continue;
    for (const auto& task : clones) {
      if (task.event_chain_id == started.chain_id) return task.task;
    }
  }
  return std::nullopt;
}

std::string extraConfigXml(const std::map<std::string, std::string>& values) {
  XmlWriter w;
  for (const auto& [key, value] : values) {
    w.open("extraConfig", "OptionValue").text("key", key);
    w.raw("<value xsi:type=\"xsd:string\">" + xmlEscape(value) + "</value>");
    w.close("extraConfig");
  }
  return w.str();
}

// Walks (and creates) `path` under the datacenter's VM folder; returns the last folder.
MoRef ensureFolder(Vim& vim, const Inventory::Datacenter& dc, const std::string& path,
                   Deadline deadline) {
  MoRef at = dc.vm_folder;
  std::string walked = dc.name + "/vm";
  size_t start = 0;
  while (start <= path.size()) {
    size_t end = path.find('/', start);
    if (end == std::string::npos) end = path.size();
    std::string part = path.substr(start, end - start);
    start = end + 1;
    if (part.empty()) continue;
    walked += "/" + part;
    if (auto found = vim.findByInventoryPath(walked, deadline)) {
      at = *found;
      continue;
    }
    try {
      at = vim.createFolder(at, part, deadline);
    } catch (const VimFault& fault) {
      // Another reconcile created it between the lookup and the create.
      if (fault.kind() != FaultKind::kDuplicateName) throw;
      auto found = vim.findByInventoryPath(walked, deadline);
      if (!found) throw;
      at = *found;
    }
  }
  return at;
}

struct LiveNic {
  int key = 0;
  std::string label;
  std::string type;          // VirtualVmxnet3, VirtualE1000, ...
  std::string network_name;  // what the backing points at, resolved through the VM's networks
  int controller_key = 0;
  std::string unit_number;
  std::string address_type;
  std::string mac_address;
};

struct LiveDisk {
  int key = 0;
  std::string label;
  int controller_key = 0;
  int unit_number = 0;
  int64_t capacity_kb = 0;
  std::string backing_type;
  std::string file_name;
  std::string disk_mode;
};

struct LiveVm {
  MoRef ref;
  std::vector<LiveNic> nics;
  std::vector<LiveDisk> disks;
  std::string instance_uuid;
  std::string power_state;  // poweredOn | poweredOff | suspended
  int64_t num_cpus = 0;
  int64_t memory_mib = 0;
  std::map<std::string, std::string> extra_config;
  std::vector<std::string> addresses;
  MoRef parent_folder;
  std::string tools_running_status;  // guest.toolsRunningStatus, e.g. guestToolsRunning
};

int intOf(const pugi::xml_node& node, std::string_view name) {
  try {
    return std::stoi(childText(node, name).value_or("0"));
  } catch (const std::exception&) {
    return 0;
  }
}

int64_t int64Of(const pugi::xml_node& node, std::string_view name) {
  try {
    return std::stoll(childText(node, name).value_or("0"));
  } catch (const std::exception&) {
    return 0;
  }
}

std::string label(const pugi::xml_node& device) {
  return childText(child(device, "deviceInfo"), "label").value_or("");
}

// An edited device carries its deviceInfo: vCenter ignores it, vcsim 0.24 dereferences it.
void deviceInfo(XmlWriter& w, const std::string& label) {
  w.open("deviceInfo").text("label", label).text("summary", label).close("deviceInfo");
}

// The VM and, in the same round trip, the networks it is attached to (to name NIC backings).
LiveVm readVm(Vim& vim, const MoRef& vm, Deadline deadline) {
  PropertyResult r = vim.retrieveWithReferenced(
      vm, "network",
      {{"VirtualMachine",
        {"config.instanceUuid", "runtime.powerState", "config.hardware.numCPU",
         "config.hardware.memoryMB", "config.extraConfig", "config.hardware.device", "guest.net",
         "guest.ipAddress", "guest.toolsRunningStatus", "parent"}},
       {"Network", {"name"}},
       {"DistributedVirtualPortgroup", {"name", "key"}}},
      deadline);
  std::map<std::string, std::string> network_names, portgroup_names;
  const ObjectContent* found = nullptr;
  for (const auto& o : r.objects) {
    if (o.obj == vm) {
      found = &o;
    } else {
      network_names[o.obj.value] = o.text("name");
      if (o.node("key")) portgroup_names[o.text("key")] = o.text("name");
    }
  }
  if (found == nullptr) throw VimFault("ManagedObjectNotFound", "VM " + vm.value + " is gone");
  const ObjectContent& o = *found;
  LiveVm live;
  live.ref = vm;
  live.instance_uuid = o.text("config.instanceUuid");
  live.power_state = o.text("runtime.powerState");
  live.num_cpus = o.integer("config.hardware.numCPU").value_or(0);
  live.memory_mib = o.integer("config.hardware.memoryMB").value_or(0);
  live.parent_folder = o.moref("parent");
  live.tools_running_status = o.text("guest.toolsRunningStatus");
  for (pugi::xml_node option : children(o.node("config.extraConfig"), "OptionValue")) {
    live.extra_config[childText(option, "key").value_or("")] =
        childText(option, "value").value_or("");
  }
  for (pugi::xml_node device : children(o.node("config.hardware.device"), "VirtualDevice")) {
    std::string type = xsiType(device);
    pugi::xml_node backing = child(device, "backing");
    if (type == "VirtualDisk") {
      live.disks.push_back({intOf(device, "key"), label(device), intOf(device, "controllerKey"),
                            intOf(device, "unitNumber"), int64Of(device, "capacityInKB"),
                            xsiType(backing), childText(backing, "fileName").value_or(""),
                            childText(backing, "diskMode").value_or("persistent")});
    } else if (child(device, "macAddress") || child(device, "addressType")) {
      LiveNic nic{intOf(device, "key"),
                  label(device),
                  type,
                  {},
                  intOf(device, "controllerKey"),
                  childText(device, "unitNumber").value_or(""),
                  childText(device, "addressType").value_or(""),
                  childText(device, "macAddress").value_or("")};
      if (pugi::xml_node port = child(backing, "port")) {
        nic.network_name = portgroup_names[childText(port, "portgroupKey").value_or("")];
      } else if (pugi::xml_node net = child(backing, "network")) {
        nic.network_name = network_names[net.text().get()];
      } else {
        nic.network_name = childText(backing, "deviceName").value_or("");
      }
      live.nics.push_back(std::move(nic));
    }
  }
  for (pugi::xml_node nic : children(o.node("guest.net"), "GuestNicInfo")) {
    for (pugi::xml_node ip : children(nic, "ipAddress")) {
      std::string address = ip.text().get();
      if (!address.empty() && std::find(live.addresses.begin(), live.addresses.end(), address) ==
                                  live.addresses.end()) {
        live.addresses.push_back(address);
      }
    }
  }
  std::string primary = o.text("guest.ipAddress");
  if (!primary.empty() &&
      std::find(live.addresses.begin(), live.addresses.end(), primary) == live.addresses.end()) {
    live.addresses.insert(live.addresses.begin(), primary);
  }
  return live;
}

bool nicsDrift(const MachineSpec& spec, const LiveVm& live) {
  if (live.nics.size() != spec.network.size()) return true;
  for (size_t i = 0; i < spec.network.size(); ++i) {
    if (live.nics[i].network_name != spec.network[i].port_group) return true;
  }
  return false;
}

// deviceChange entries that bring the NICs to the spec: re-back the ones on another network
// (keeping their key, slot and MAC), add missing vmxnet3 NICs, remove extra ones. Returns
// a Status when a network is not reachable from the cluster.
std::optional<Status> nicChanges(const MachineSpec& spec, const LiveVm& live,
                                 const Inventory& inventory, XmlWriter& w) {
  const Inventory::Cluster* cluster = inventory.cluster(spec.datacenter, spec.cluster);
  if (cluster == nullptr) {
    return Status{
        Code::kNotFound, "ClusterNotFound",
        "cluster '" + spec.cluster + "' does not exist in datacenter '" + spec.datacenter + "'"};
  }
  for (size_t i = 0; i < spec.network.size(); ++i) {
    auto network = inventory.resolveNetwork(*cluster, spec.network[i].port_group);
    if (!network) {
      return Status{Code::kFailedPrecondition, "NetworkNotFound",
                    "network[" + std::to_string(i) + "].portGroup '" + spec.network[i].port_group +
                        "' is not reachable from cluster '" + spec.cluster + "'"};
    }
    if (i < live.nics.size()) {
      const LiveNic& nic = live.nics[i];
      if (nic.network_name == spec.network[i].port_group) continue;
      w.open("deviceChange").text("operation", "edit");
      w.open("device", nic.type).integer("key", nic.key);
      deviceInfo(w, nic.label);
      w.raw(networkBackingXml(*network));
      w.integer("controllerKey", nic.controller_key);
      if (!nic.unit_number.empty()) w.text("unitNumber", nic.unit_number);
      if (!nic.address_type.empty()) w.text("addressType", nic.address_type);
      if (!nic.mac_address.empty()) w.text("macAddress", nic.mac_address);
      w.close("device").close("deviceChange");
    } else {
      w.open("deviceChange").text("operation", "add");
      w.open("device", "VirtualVmxnet3")
          .integer("key", -200 - static_cast<int>(i))
          .raw(networkBackingXml(*network))
          .open("connectable")
          .boolean("startConnected", true)
          .boolean("allowGuestControl", true)
          .boolean("connected", true)
          .close("connectable")
          .text("addressType", "generated")
          .close("device")
          .close("deviceChange");
    }
  }
  for (size_t i = spec.network.size(); i < live.nics.size(); ++i) {
    w.open("deviceChange").text("operation", "remove");
    w.open("device", live.nics[i].type).integer("key", live.nics[i].key).close("device");
    w.close("deviceChange");
  }
  return std::nullopt;
}

// deviceChange entries for disks: grow the first disk (never shrink: that loses data) and add
// the data disks the VM lacks, thin, on the first disk's controller.
void diskChanges(const MachineSpec& spec, const LiveVm& live, XmlWriter& w) {
  if (spec.disks.empty() || live.disks.empty()) return;
  const LiveDisk& os = live.disks.front();
  const int64_t wanted_kb = spec.disks.front().size_gib * 1024 * 1024;
  if (wanted_kb > os.capacity_kb) {
    w.open("deviceChange").text("operation", "edit");
    w.open("device", "VirtualDisk").integer("key", os.key);
    deviceInfo(w, os.label);
    w.open("backing", os.backing_type.empty() ? "VirtualDiskFlatVer2BackingInfo" : os.backing_type)
        .text("fileName", os.file_name)
        .text("diskMode", os.disk_mode)
        .close("backing");
    w.integer("controllerKey", os.controller_key)
        .integer("unitNumber", os.unit_number)
        .integer("capacityInKB", wanted_kb)
        .close("device")
        .close("deviceChange");
  }
  std::vector<int> used;
  for (const auto& d : live.disks) {
    if (d.controller_key == os.controller_key) used.push_back(d.unit_number);
  }
  int unit = 0;
  for (size_t i = live.disks.size(); i < spec.disks.size(); ++i) {
    // Unit 7 is the SCSI controller's own.
    while (unit == 7 || std::find(used.begin(), used.end(), unit) != used.end()) ++unit;
    used.push_back(unit);
    w.open("deviceChange").text("operation", "add").text("fileOperation", "create");
    w.open("device", "VirtualDisk")
        .integer("key", -300 - static_cast<int>(i))
        .open("backing", "VirtualDiskFlatVer2BackingInfo")
        .text("fileName", "")
        .text("diskMode", "persistent")
        .boolean("thinProvisioned", true)
        .close("backing")
        .integer("controllerKey", os.controller_key)
        .integer("unitNumber", unit)
        .integer("capacityInKB", spec.disks[i].size_gib * 1024 * 1024)
        .close("device")
        .close("deviceChange");
  }
}

std::string observedPower(const std::string& vim_state) {
  if (vim_state == "poweredOn") return "PoweredOn";
  if (vim_state == "suspended") return "Suspended";
  return "PoweredOff";
}

void writeStatus(sdk::Reply& reply, const MachineSpec& spec, const LiveVm& vm, bool provisioned) {
  auto& a = reply.allocator();
  auto& status = reply.status();
  status.RemoveAllMembers();
  status.AddMember("vmRef", json::stringValue(vm.ref.value, a), a);
  status.AddMember("instanceUuid", json::stringValue(vm.instance_uuid, a), a);
  status.AddMember("providerID", json::stringValue(providerIdOf(vm.instance_uuid), a), a);
  status.AddMember("observedPowerState", json::stringValue(observedPower(vm.power_state), a), a);
  if (!spec.failure_domain.empty()) {
    status.AddMember("failureDomain", json::stringValue(spec.failure_domain, a), a);
  }
  rapidjson::Value init(rapidjson::kObjectType);
  init.AddMember("provisioned", provisioned, a);
  status.AddMember("initialization", init, a);
  rapidjson::Value addresses(rapidjson::kArrayType);
  for (const auto& ip : vm.addresses) {
    rapidjson::Value entry(rapidjson::kObjectType);
    entry.AddMember("type", "InternalIP", a);
    entry.AddMember("address", json::stringValue(ip, a), a);
    addresses.PushBack(entry, a);
  }
  status.AddMember("addresses", addresses, a);
  // The guest's own signal (a pool with readiness GuestReady waits for it): VMware Tools
  // running in the guest.
  if (vm.power_state != "poweredOn") {
    reply.setCondition("GuestReady", "False", "NotRunning", "the VM is not powered on");
  } else if (vm.tools_running_status == "guestToolsRunning") {
    reply.setCondition("GuestReady", "True", "GuestToolsRunning", "VMware Tools run in the guest");
  } else {
    reply.setCondition("GuestReady", "False", "GuestToolsNotRunning",
                       "VMware Tools do not run in the guest (" +
                           (vm.tools_running_status.empty() ? std::string("not reported")
                                                            : vm.tools_running_status) +
                           "): it is still booting, or its image has no VMware Tools");
  }
}

constexpr std::string_view kProviderIdScheme = "vsphere://";

}  // namespace

std::string providerIdOf(const std::string& instance_uuid) {
  return std::string(kProviderIdScheme) + instance_uuid;
}

std::optional<std::string> instanceUuidOf(std::string_view provider_id) {
  if (provider_id.substr(0, kProviderIdScheme.size()) != kProviderIdScheme) return std::nullopt;
  std::string uuid = lowerUuid(std::string(provider_id.substr(kProviderIdScheme.size())));
  if (!isUuid(uuid)) return std::nullopt;
  return uuid;
}

Status MachineReconciler::reconcile(const sdk::Call& call, const sdk::ReconcileRequest& request,
                                    sdk::Reply& reply) {
  const MachineSpec spec = MachineSpec::parse(request.spec);
  const std::string uuid = lowerUuid(request.uid);
  if (!isUuid(uuid)) {
    return {Code::kInvalidArgument, "InvalidSpec",
            "metadata.uid '" + request.uid + "' is not a UUID; it becomes the VM's instance UUID"};
  }
  const std::string who = objectName(request);
  const Deadline deadline = call.deadline();
  return withVimErrors("VSphereMachine " + who, [&]() -> Status {
    if (auto pending = parseTaskToken(request.operation_token)) {
      if (auto stop = awaitTask(vim_, *pending, "TaskRunning", pending->phase + " of " + who,
                                kTaskPoll, deadline, reply)) {
        return *stop;
      }
    }
    if (call.cancelled()) return cancelled(who);
    std::optional<MoRef> vm = vim_.findByInstanceUuid(uuid, deadline);
    if (!vm) {
      std::string known = json::stringOr(request.status, "vmRef");
      if (!known.empty() || json::boolean(request.status, "initialization.provisioned")) {
        // Never recreate behind the user's back: a VM that vanished may hold data someone
        // wants to recover; deleting the VSphereMachine makes a fresh one.
        return {Code::kFailedPrecondition, "BackendMissing",
                "VM " + (known.empty() ? uuid : known) + " of " + who +
                    " no longer exists in vCenter; delete the VSphereMachine to recreate it"};
      }
      if (auto task = cloneInFlight(vim_, request.name, deadline)) {
        auto& a = reply.allocator();
        reply.status().AddMember("instanceUuid", json::stringValue(uuid, a), a);
        return started(reply, "clone", *task,
                       "clone of " + who + " (in flight; its operation token was lost)");
      }
      return clone(spec, request, uuid, deadline, reply);
    }

    LiveVm live = readVm(vim_, *vm, deadline);
    const std::map<std::string, std::string> wanted_info = guestInfo(spec, request.name);
    std::map<std::string, std::string> info_changes;
    for (const auto& [key, value] : wanted_info) {
      auto it = live.extra_config.find(key);
      if (it == live.extra_config.end() || it->second != value) info_changes[key] = value;
    }
    const bool hardware_changes =
        live.num_cpus != spec.num_cpus || live.memory_mib != spec.memory_mib;

    // A restart request (sdk/restart.h) on a running VM: powered off now, answered in the same
    // reply as the token; the power step below powers it on again. On a VM that is not running
    // it is answered NotRunning in whatever this pass writes.
    const std::string restart = sdk::unansweredRestart(request);
    if (!restart.empty() && live.power_state == "poweredOn" &&
        spec.desired_power_state == "PoweredOn") {
      writeStatus(reply, spec, live, true);
      sdk::answerRestart(reply, restart, true);
      XmlWriter none;
      return started(reply, "poweroff",
                     vim_.startTask("PowerOffVM_Task", live.ref, none.str(), deadline),
                     "restart of " + who + " as requested at " + restart + ": power off, then on");
    }
    auto write_status = [&](bool provisioned) {
      writeStatus(reply, spec, live, provisioned);
      if (!restart.empty()) sdk::answerRestart(reply, restart, false);
    };

    // spec.resizePolicy WaitForRestart: CPU and memory wait for the user's restart request
    // (which powers the VM off; the reconfiguration then happens while it is off).
    const bool held =
        hardware_changes && live.power_state == "poweredOn" && sdk::waitsForRestart(request);
    if (hardware_changes && live.power_state == "poweredOn" && !held) {
      // CPU and memory changes need the VM off (hot-add is opt-in and not always allowed);
      // the power step below turns it back on.
      write_status(false);
      XmlWriter none;
      return started(reply, "poweroff",
                     vim_.startTask("PowerOffVM_Task", live.ref, none.str(), deadline),
                     "power off of " + who + " to resize it");
    }
    XmlWriter devices;
    if (nicsDrift(spec, live)) {
      // Only now is the inventory needed: to resolve the wanted networks.
      Inventory inventory = Inventory::load(vim_, deadline);
      if (auto failed = nicChanges(spec, live, inventory, devices)) return *failed;
    }
    diskChanges(spec, live, devices);
    if ((hardware_changes && !held) || !info_changes.empty() || !devices.str().empty()) {
      XmlWriter w;
      w.open("spec");
      if (hardware_changes && !held) {
        w.integer("numCPUs", spec.num_cpus).integer("memoryMB", spec.memory_mib);
      }
      w.raw(devices.str());
      w.raw(extraConfigXml(info_changes));
      w.close("spec");
      write_status(false);
      return started(reply, "reconfigure",
                     vim_.startTask("ReconfigVM_Task", live.ref, w.str(), deadline),
                     "reconfiguration of " + who);
    }

    const std::string observed = observedPower(live.power_state);
    if (observed != spec.desired_power_state) {
      std::string method = spec.desired_power_state == "PoweredOn"    ? "PowerOnVM_Task"
                           : spec.desired_power_state == "PoweredOff" ? "PowerOffVM_Task"
                                                                      : "SuspendVM_Task";
      if (spec.desired_power_state == "Suspended" && observed == "PoweredOff") {
        method = "PowerOnVM_Task";  // suspend only from on
      }
      write_status(true);
      return started(reply, "power", vim_.startTask(method, live.ref, {}, deadline),
                     "power change of " + who + " to " + spec.desired_power_state);
    }
    write_status(true);
    if (held) {
      reply.setCondition("HardwareApplied", "False", "RestartRequired",
                         "the running VM has " + std::to_string(live.num_cpus) + " vCPUs and " +
                             std::to_string(live.memory_mib) + " MiB, the spec " +
                             std::to_string(spec.num_cpus) + " and " +
                             std::to_string(spec.memory_mib) +
                             "; they apply at the next restart (spec.resizePolicy "
                             "WaitForRestart: banlieue vm restart)");
    } else {
      reply.setCondition("HardwareApplied", "True", "Applied",
                         "the VM has the spec's CPUs, memory, disks and NICs");
    }
    endTask(reply);
    if (atRest({.carried_token = request.operation_token.has_value(),
                .power_as_desired = observed == spec.desired_power_state,
                .hardware_held = held,
                .powered_on = live.power_state == "poweredOn",
                .tools_running = live.tools_running_status == "guestToolsRunning",
                .has_addresses = !live.addresses.empty()})) {
      reply.settle();
    }
    return Status::ok();
  });
}

bool atRest(const PassSummary& pass) {
  return !pass.carried_token && pass.power_as_desired && !pass.hardware_held &&
         (!pass.powered_on || (pass.tools_running && pass.has_addresses));
}

Status MachineReconciler::clone(const MachineSpec& spec, const sdk::ReconcileRequest& request,
                                const std::string& uuid, Deadline deadline, sdk::Reply& reply) {
  const std::string who = objectName(request);
  Inventory inventory = Inventory::load(vim_, deadline);
  const Inventory::Datacenter* dc = inventory.datacenter(spec.datacenter);
  if (dc == nullptr) {
    return {Code::kNotFound, "DatacenterNotFound",
            "datacenter '" + spec.datacenter + "' of " + who + " does not exist"};
  }
  const Inventory::Cluster* cluster = inventory.cluster(spec.datacenter, spec.cluster);
  if (cluster == nullptr) {
    return {
        Code::kNotFound, "ClusterNotFound",
        "cluster '" + spec.cluster + "' does not exist in datacenter '" + spec.datacenter + "'"};
  }
  auto datastore = inventory.resolveDatastore(*cluster, spec.datastore);
  if (!datastore) {
    return {Code::kFailedPrecondition, "DatastoreNotFound",
            "no accessible datastore or datastore cluster '" + spec.datastore +
                "' is reachable from cluster '" + spec.cluster + "'"};
  }
  for (size_t i = 0; i < spec.network.size(); ++i) {
    if (!inventory.resolveNetwork(*cluster, spec.network[i].port_group)) {
      return {Code::kFailedPrecondition, "NetworkNotFound",
              "network[" + std::to_string(i) + "].portGroup '" + spec.network[i].port_group +
                  "' is not reachable from cluster '" + spec.cluster + "'"};
    }
  }
  std::string template_path = dc->name + "/vm/";
  if (!spec.template_folder.empty()) template_path += spec.template_folder + "/";
  template_path += spec.template_name;
  std::optional<MoRef> source = vim_.findByInventoryPath(template_path, deadline);
  if (!source || source->type != "VirtualMachine") {
    return {Code::kNotFound, "TemplateNotFound",
            "template '" + spec.template_name + "' not found at '" + template_path + "'"};
  }
  MoRef pool = cluster->resource_pool;
  if (!spec.resource_pool.empty()) {
    auto found = vim_.findByInventoryPath(
        dc->name + "/host/" + spec.cluster + "/Resources/" + spec.resource_pool, deadline);
    if (!found) {
      return {
          Code::kNotFound, "ResourcePoolNotFound",
          "resource pool '" + spec.resource_pool + "' not found in cluster '" + spec.cluster + "'"};
    }
    pool = *found;
  }
  MoRef folder = ensureFolder(vim_, *dc, spec.folder, deadline);

  XmlWriter w;
  w.moref("folder", folder).text("name", request.name);
  w.open("spec");
  w.open("location").moref("datastore", datastore->ref).moref("pool", pool).close("location");
  w.boolean("template", false);
  // vCenter applies config in the clone; vcsim ignores all of it but the instance UUID and
  // extraConfig, and the reconfigure step after the clone converges the rest either way.
  w.open("config")
      .text("instanceUuid", uuid)
      .integer("numCPUs", spec.num_cpus)
      .integer("memoryMB", spec.memory_mib)
      .raw(extraConfigXml(guestInfo(spec, request.name)))
      .close("config");
  w.boolean("powerOn", false);
  w.close("spec");
  MoRef task = vim_.startTask("CloneVM_Task", *source, w.str(), deadline);
  auto& a = reply.allocator();
  reply.status().AddMember("instanceUuid", json::stringValue(uuid, a), a);
  if (!spec.failure_domain.empty()) {
    reply.status().AddMember("failureDomain", json::stringValue(spec.failure_domain, a), a);
  }
  return started(reply, "clone", task,
                 "clone of " + who + " from " + template_path + " to " + datastore->name);
}

Status MachineReconciler::finalize(const sdk::Call& call, const sdk::ReconcileRequest& request,
                                   sdk::Reply& reply) {
  const std::string who = objectName(request);
  const std::string uuid = lowerUuid(request.uid);
  const Deadline deadline = call.deadline();
  return withVimErrors("deleting VSphereMachine " + who, [&]() -> Status {
    if (auto pending = parseTaskToken(request.operation_token)) {
      if (auto stop = awaitTask(vim_, *pending, "TaskRunning", pending->phase + " of " + who,
                                kTaskPoll, deadline, reply)) {
        // A failed power-off (already off) or destroy is retried from the live state below.
        if (stop->code() == Code::kInProgress) return *stop;
        if (pending->phase == "destroy") return *stop;
      }
    }
    if (call.cancelled()) return cancelled(who);
    std::optional<MoRef> vm = isUuid(uuid) ? vim_.findByInstanceUuid(uuid, deadline) : std::nullopt;
    if (!vm) {
      // A clone still in flight would complete after the finalizer is gone, an orphan: wait
      // for it, then delete what it made.
      if (auto task = cloneInFlight(vim_, request.name, deadline)) {
        return started(reply, "clone", *task,
                       "clone of " + who + " (in flight; deleted once it completes)");
      }
      endTask(reply);
      return Status::ok();  // never created, or already gone: both mean done
    }
    LiveVm live = readVm(vim_, *vm, deadline);
    if (live.power_state != "poweredOff") {
      return started(reply, "poweroff", vim_.startTask("PowerOffVM_Task", live.ref, {}, deadline),
                     "power off of " + who + " before deletion");
    }
    return started(reply, "destroy", vim_.startTask("Destroy_Task", live.ref, {}, deadline),
                   "deletion of " + who);
  });
}

}  // namespace banlieue::vsphere
