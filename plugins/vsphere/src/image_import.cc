#include "plugins/vsphere/src/image_import.h"

#include "plugins/vsphere/src/errors.h"
#include "plugins/vsphere/src/inventory.h"
#include "plugins/vsphere/src/naming.h"
#include "plugins/vsphere/src/task_poll.h"

#include <banlieue/sdk/json.h>
#include <banlieue/sdk/uri.h>

#include <ctime>
#include <filesystem>

namespace banlieue::vsphere {
namespace {

namespace json = sdk::json;
using sdk::Code;
using sdk::Status;

constexpr char kMarker[] = "guestinfo.banlieue.import";
constexpr std::chrono::milliseconds kPoll{2000};
constexpr std::chrono::milliseconds kInstallPoll{10000};
constexpr std::string_view kDestroyPhase = "destroy-image";
constexpr std::string_view kDeleteIsoPhase = "delete-iso";
// The datastore path of the ISO an import uploaded, kept on its VM so that a deletion of the
// template can remove the ISO too (the template itself no longer names it: its CD-ROM goes).
constexpr char kIsoKey[] = "guestinfo.banlieue.import.iso";
// Which import made the VM: the artifact's checksum and the VMImage's force-reimport value.
// spec.template.forceCreate replaces a template whose build differs (an earlier import's).
constexpr char kBuildKey[] = "guestinfo.banlieue.import.build";
// The VMImage annotation whose new value makes the provider runtime run its imports again
// (host/roles/images/import_job.h; a plugin never includes host code).
constexpr char kForceReimportAnnotation[] = "banlieue.io/force-reimport";
// The token of an upload announced to the host (the upload itself runs in the next call, so
// the zone row shows Uploading while it does): "upload:<datastore name>". No Task carries it.
constexpr std::string_view kUploadToken = "upload:";
// The token of the wait for the installer: no Task, no colon (parseTaskToken ignores it).
constexpr std::string_view kInstallingToken = "installing";

// The phases an import goes through, as the zone row's progress.phase shows them (the import
// Job logs them; the provider reads the log).
constexpr std::string_view kUploading = "Uploading";
constexpr std::string_view kCreatingVm = "CreatingVM";
constexpr std::string_view kPoweringOn = "PoweringOn";
constexpr std::string_view kInstalling = "Installing";
constexpr std::string_view kRemovingCdrom = "RemovingCdrom";
constexpr std::string_view kPoweringOff = "PoweringOff";
constexpr std::string_view kRecreating = "Recreating";

// The phase a pending task of the import belongs to, by its token's phase.
std::string_view phaseOfTask(std::string_view token_phase) {
  if (token_phase == "create") return kCreatingVm;
  if (token_phase == "prepare" || token_phase == "install") return kPoweringOn;
  if (token_phase == "mark") return kInstalling;
  if (token_phase == "finish") return kRemovingCdrom;
  if (token_phase == "poweroff") return kPoweringOff;
  if (token_phase == "recreate" || token_phase == "recreate-off") return kRecreating;
  return "Importing";
}

// status.progress of an IN_PROGRESS reply: what `banlieue image-import` logs as the import's
// progress line and the provider puts on the VMImage's zone row.
void writeProgress(sdk::Reply& reply, std::string_view phase, int64_t done = 0, int64_t total = 0) {
  auto& a = reply.allocator();
  auto& status = reply.status();
  status.RemoveMember("progress");
  rapidjson::Value progress(rapidjson::kObjectType);
  progress.AddMember("phase", json::stringValue(phase, a), a);
  progress.AddMember("bytesDone", done, a);
  progress.AddMember("bytesTotal", total, a);
  status.AddMember("progress", progress, a);
}

std::string importBuild(const sdk::ImportImageRequest& request) {
  std::string build = "sha256:" + request.artifact_sha256;
  const rapidjson::Value* annotations = json::find(request.image, "metadata.annotations");
  const rapidjson::Value* force = json::member(annotations, kForceReimportAnnotation);
  if (force != nullptr && force->IsString()) {
    // Trimmed, as the provider runtime reads it: a value of blanks asks for no re-import.
    std::string_view value(force->GetString(), force->GetStringLength());
    const auto first = value.find_first_not_of(" \t\r\n");
    if (first != std::string_view::npos) {
      value = value.substr(first, value.find_last_not_of(" \t\r\n") - first + 1);
      build += " force-reimport:" + std::string(value);
    }
  }
  return build;
}

int64_t nowSeconds() {
  return static_cast<int64_t>(std::time(nullptr));
}

Status importStarted(sdk::Reply& reply, const std::string& phase, const MoRef& task,
                     const std::string& what) {
  return taskInProgress(reply, {phase, task}, "Importing", what, kPoll);
}

std::string optionXml(const char* key, const std::string& value) {
  XmlWriter w;
  w.open("extraConfig", "OptionValue").text("key", key);
  w.raw("<value xsi:type=\"xsd:string\">" + xmlEscape(value) + "</value>");
  w.close("extraConfig");
  return w.str();
}

std::string markerXml(const std::string& value) {
  return optionXml(kMarker, value);
}

// The vim25 device type of spec.template.network[].adapter (the CRD's values). vmxnet2 is
// deprecated and modern guests carry no driver for it, but the contract offers it.
std::optional<std::string_view> adapterType(std::string_view adapter) {
  if (adapter == "vmxnet3") return "VirtualVmxnet3";
  if (adapter == "vmxnet2") return "VirtualVmxnet2";
  if (adapter == "e1000e") return "VirtualE1000e";
  if (adapter == "e1000") return "VirtualE1000";
  return std::nullopt;
}

// The vim25 controller type of spec.template.disk.controller (the CRD's values). BusLogic works
// only with BIOS firmware (vSphere refuses it with EFI, the import's default): checked below.
std::optional<std::string_view> diskControllerType(std::string_view controller) {
  if (controller == "pvscsi") return "ParaVirtualSCSIController";
  if (controller == "busLogic") return "VirtualBusLogicController";
  if (controller == "lsiLogic") return "VirtualLsiLogicController";
  if (controller == "lsiLogicSas") return "VirtualLsiLogicSASController";
  if (controller == "nvme") return "VirtualNVMEController";
  return std::nullopt;
}

void writeZoneRow(sdk::Reply& reply, const std::string& fd, const std::string& name,
                  const std::string& folder, bool ready, const std::string& reason,
                  const std::string& message) {
  auto& a = reply.allocator();
  auto& status = reply.status();
  status.RemoveAllMembers();
  status.AddMember("name", json::stringValue(fd, a), a);
  status.AddMember("ready", ready, a);
  status.AddMember("resolvedRef", json::stringValue(name, a), a);
  status.AddMember("templateFolder", json::stringValue(folder, a), a);
  if (!reason.empty()) status.AddMember("reason", json::stringValue(reason, a), a);
  if (!message.empty()) status.AddMember("message", json::stringValue(message, a), a);
}

struct ImportVm {
  MoRef ref;
  bool is_template = false;
  std::string power_state;
  std::string marker;
  std::string iso;  // the uploaded ISO's datastore path ("[ds] banlieue-images/….iso"), if known
  std::string build;  // kBuildKey: which import made it (empty before it was recorded)
  int cdrom_key = -1;
  std::string cdrom_xml;  // the live CD-ROM device re-encoded for a remove
};

ImportVm readImportVm(Vim& vim, const MoRef& ref, Deadline deadline) {
  PropertyResult r = vim.retrieveObjects(
      {ref},
      {{"VirtualMachine",
        {"config.template", "runtime.powerState", "config.extraConfig", "config.hardware.device"}}},
      deadline);
  if (r.objects.empty()) throw VimFault("ManagedObjectNotFound", "VM " + ref.value + " is gone");
  const ObjectContent& o = r.objects.front();
  ImportVm vm;
  vm.ref = ref;
  vm.is_template = o.boolean("config.template");
  vm.power_state = o.text("runtime.powerState");
  for (pugi::xml_node option : children(o.node("config.extraConfig"), "OptionValue")) {
    if (childText(option, "key").value_or("") == kMarker) {
      vm.marker = childText(option, "value").value_or("");  // the last one wins (vcsim appends)
    } else if (childText(option, "key").value_or("") == kIsoKey) {
      vm.iso = childText(option, "value").value_or("");
    } else if (childText(option, "key").value_or("") == kBuildKey) {
      vm.build = childText(option, "value").value_or("");
    }
  }
  for (pugi::xml_node device : children(o.node("config.hardware.device"), "VirtualDevice")) {
    if (xsiType(device) == "VirtualCdrom") {
      vm.cdrom_key = std::stoi(childText(device, "key").value_or("-1"));
      XmlWriter w;
      w.open("device", "VirtualCdrom")
          .integer("key", vm.cdrom_key)
          .integer("controllerKey", std::stoi(childText(device, "controllerKey").value_or("0")))
          .integer("unitNumber", std::stoi(childText(device, "unitNumber").value_or("0")))
          .close("device");
      vm.cdrom_xml = w.str();
    }
  }
  return vm;
}

}  // namespace

std::string isoDatastorePath(const std::string& image, const std::string& sha256) {
  return "banlieue-images/" + slugify(image) + "-" + slugify(sha256.substr(0, 16)) + ".iso";
}

std::string datastoreFileTarget(const std::string& datastore_path, const std::string& datacenter,
                                const std::string& datastore) {
  std::string target = "/folder";
  size_t start = 0;
  for (;;) {
    size_t slash = datastore_path.find('/', start);
    target += "/" + sdk::pathSegment(std::string_view(datastore_path).substr(start, slash - start));
    if (slash == std::string::npos) break;
    start = slash + 1;
  }
  return target + "?dcPath=" + sdk::percentEncode(datacenter) +
         "&dsName=" + sdk::percentEncode(datastore);
}

TemplateSettings templateSettings(const rapidjson::Value* image) {
  TemplateSettings s;
  const rapidjson::Value* t = json::find(image, "spec.template");
  s.root_folder = json::stringOr(t, "rootFolder");
  s.cpus = json::integer(t, "cpus").value_or(2);
  s.memory_mib = json::integer(t, "memoryMib").value_or(4096);
  s.disk_gib = json::integer(t, "disk.size").value_or(100);
  s.disk_type = json::stringOr(t, "disk.type", "thin");
  s.disk_controller = json::stringOr(t, "disk.controller", "pvscsi");
  s.firmware = json::stringOr(t, "firmware", "efi");
  s.install_mode = json::stringOr(t, "installMode", "immediate");
  s.install_timeout_seconds = json::integer(t, "installTimeoutSeconds").value_or(1800);
  s.force_upload = json::boolean(t, "forceUpload");
  s.force_create = json::boolean(t, "forceCreate");
  s.retain_on_delete = json::boolean(t, "retainOnDelete");
  if (const auto* nets = json::member(t, "network"); nets != nullptr && nets->IsArray()) {
    for (const auto& n : nets->GetArray()) {
      TemplateNic nic;
      nic.network = json::stringOr(&n, "network");
      nic.adapter = json::stringOr(&n, "adapter", "vmxnet3");
      nic.pci_slot = json::integer(&n, "pciSlot");
      s.nics.push_back(std::move(nic));
    }
  }
  s.guest_id = json::stringOr(t, "guestId");
  if (s.guest_id.empty()) {
    std::string family = json::stringOr(image, "spec.osFamily", "linux");
    s.guest_id = family == "windows" ? "windows9_64Guest"
                 : family == "linux" ? "otherLinux64Guest"
                                     : "other3xLinux64Guest";
  }
  auto bad = [](const std::string& field, const std::string& what) {
    return sdk::Error(Code::kInvalidArgument, "InvalidSpec",
                      "VMImage spec.template." + field + " " + what);
  };
  if (s.cpus < 1 || s.cpus > 256) throw bad("cpus", "must be 1..256");
  if (s.memory_mib < 128) throw bad("memoryMib", "must be at least 128");
  if (s.disk_gib < 1) throw bad("disk.size", "must be at least 1 GiB");
  if (s.firmware != "efi" && s.firmware != "bios" && s.firmware != "efi-secure") {
    throw bad("firmware", "must be bios, efi or efi-secure");
  }
  if (s.install_mode != "immediate" && s.install_mode != "deferred" && s.install_mode != "manual") {
    throw bad("installMode", "must be immediate, deferred or manual");
  }
  if (s.install_timeout_seconds < 1) throw bad("installTimeoutSeconds", "must be positive");
  if (!diskControllerType(s.disk_controller)) {
    throw bad("disk.controller", "'" + s.disk_controller +
                                     "' is not supported: pvscsi, lsiLogic, lsiLogicSas, "
                                     "busLogic or nvme");
  }
  if (s.disk_controller == "busLogic" && s.firmware != "bios") {
    throw bad("disk.controller",
              "busLogic needs firmware bios (vSphere refuses it with " + s.firmware + ")");
  }
  for (size_t i = 0; i < s.nics.size(); ++i) {
    const std::string field = "network[" + std::to_string(i) + "].";
    if (!adapterType(s.nics[i].adapter)) {
      throw bad(field + "adapter",
                "'" + s.nics[i].adapter + "' is not supported: vmxnet3, vmxnet2, e1000 or e1000e");
    }
    if (s.nics[i].pci_slot && *s.nics[i].pci_slot < 0) {
      throw bad(field + "pciSlot", "must not be negative");
    }
  }
  return s;
}

std::string installVmConfigXml(const TemplateSettings& settings, const InstallVm& vm) {
  XmlWriter w;
  w.open("config")
      .text("name", vm.name)
      .text("guestId", settings.guest_id)
      .open("files")
      .text("vmPathName", "[" + vm.datastore + "]")
      .close("files")
      .integer("numCPUs", settings.cpus)
      .integer("memoryMB", settings.memory_mib);
  // Controller, disk, NICs and CD-ROM with provisional negative keys.
  w.open("deviceChange").text("operation", "add");
  const std::string_view controller = *diskControllerType(settings.disk_controller);
  w.open("device", controller).integer("key", -100).integer("busNumber", 0);
  // VirtualSCSIController.sharedBus; an NVMe controller (VirtualController) has no such field.
  if (settings.disk_controller != "nvme") w.text("sharedBus", "noSharing");
  w.close("device").close("deviceChange");
  w.open("deviceChange").text("operation", "add").text("fileOperation", "create");
  w.open("device", "VirtualDisk")
      .integer("key", -101)
      .open("backing", "VirtualDiskFlatVer2BackingInfo")
      .text("fileName", "")
      .text("diskMode", "persistent")
      .boolean("thinProvisioned", settings.disk_type == "thin")
      .boolean("eagerlyScrub", settings.disk_type == "eagerZeroed")
      .close("backing")
      .integer("controllerKey", -100)
      .integer("unitNumber", 0)
      .integer("capacityInKB", settings.disk_gib * 1024 * 1024)
      .close("device")
      .close("deviceChange");
  int key = -102;
  for (size_t i = 0; i < vm.networks.size(); ++i) {
    const TemplateNic nic = i < settings.nics.size() ? settings.nics[i] : TemplateNic{};
    w.open("deviceChange").text("operation", "add");
    w.open("device", *adapterType(nic.adapter))
        .integer("key", key--)
        .raw(networkBackingXml(vm.networks[i]));
    // VirtualDevice is a sequence: slotInfo comes after backing (and connectable).
    if (nic.pci_slot) {
      w.open("slotInfo", "VirtualDevicePciBusSlotInfo")
          .integer("pciSlotNumber", *nic.pci_slot)
          .close("slotInfo");
    }
    w.close("device").close("deviceChange");
  }
  w.open("deviceChange").text("operation", "add");
  w.open("device", "VirtualCdrom")
      .integer("key", key)
      .open("backing", "VirtualCdromIsoBackingInfo")
      .text("fileName", vm.iso_file)
      .close("backing")
      .open("connectable")
      .boolean("startConnected", true)
      .boolean("allowGuestControl", true)
      .boolean("connected", true)
      .close("connectable")
      .integer("controllerKey", 200)
      .integer("unitNumber", 0)
      .close("device")
      .close("deviceChange");
  // vim25 types are sequences: extraConfig precedes firmware in VirtualMachineConfigSpec.
  w.raw(markerXml("created"));
  w.raw(optionXml(kIsoKey, vm.iso_file));
  if (!vm.build.empty()) w.raw(optionXml(kBuildKey, vm.build));
  w.text("firmware", settings.firmware == "bios" ? "bios" : "efi");
  w.close("config");
  return w.str();
}

Status ImageImporter::import(const sdk::Call& call, const sdk::ImportImageRequest& request,
                             const ProviderSpec& provider, sdk::Reply& reply) {
  if (request.artifact_format != "iso") {
    return {Code::kInvalidArgument, "WrongArtifactKind",
            "the vsphere provider imports iso artifacts, not " + request.artifact_format};
  }
  if (request.image_name.empty() || request.failure_domain.empty()) {
    return {Code::kInvalidArgument, "MissingField",
            "import_image needs image.metadata.name and failureDomain"};
  }
  if (provider.use_content_library) {
    return {Code::kUnimplemented, "ContentLibraryNotImplemented",
            "spec.useContentLibrary is not implemented; unset it to import per zone"};
  }
  const TemplateSettings settings = templateSettings(request.image);
  const std::string build = importBuild(request);
  const Deadline deadline = call.deadline();
  const std::string who = "import of " + request.image_name + " into " + request.failure_domain;
  return withVimErrors(who, [&]() -> Status {
    std::string announced_upload;  // the datastore the previous call said it uploads to
    if (request.operation_token && request.operation_token->rfind(kUploadToken, 0) == 0) {
      announced_upload = request.operation_token->substr(kUploadToken.size());
    } else if (auto pending = parseTaskToken(request.operation_token)) {
      if (auto stop = awaitTask(vim_, *pending, "Importing", who, kPoll, deadline, reply)) {
        if (stop->code() == Code::kInProgress) writeProgress(reply, phaseOfTask(pending->phase));
        return *stop;
      }
    }

    if (call.cancelled()) {
      return Status{Code::kCancelled, "Cancelled", who + " was cancelled by the host"};
    }
    Inventory inventory = Inventory::load(vim_, deadline);
    std::vector<FailureDomain> fds = computeFailureDomains(inventory, provider);
    auto fd = std::find_if(fds.begin(), fds.end(), [&](const FailureDomain& f) {
      return f.name == request.failure_domain;
    });
    if (fd == fds.end()) {
      return {Code::kNotFound, "FailureDomainNotFound",
              "failure domain '" + request.failure_domain + "' is not one of this vCenter's"};
    }
    const Inventory::Datacenter* dc = inventory.datacenter(fd->datacenter);
    const Inventory::Cluster* cluster = inventory.cluster(fd->datacenter, fd->cluster);
    if (dc == nullptr || cluster == nullptr) {
      return {Code::kNotFound, "FailureDomainNotFound",
              "failure domain '" + fd->name + "' vanished"};
    }
    const std::string folder_path =
        settings.root_folder.empty() ? fd->name : settings.root_folder + "/" + fd->name;
    const std::string name = request.image_name;
    std::optional<MoRef> existing =
        vim_.findByInventoryPath(dc->name + "/vm/" + folder_path + "/" + name, deadline);
    // The zone row of an import still running, in `phase`.
    auto progress = [&](std::string_view phase, const std::string& what, int64_t done = 0,
                        int64_t total = 0) {
      writeZoneRow(reply, fd->name, name, folder_path, false, "Importing", what);
      writeProgress(reply, phase, done, total);
    };

    if (existing) {
      ImportVm vm = readImportVm(vim_, *existing, deadline);
      if (settings.force_create && !vm.marker.empty() && vm.build != build) {
        // An earlier import's template (or VM): made again rather than adopted. A VM without
        // the marker is never banlieue's to destroy; it ends in ForeignVM below.
        if (vm.power_state == "poweredOn") {
          progress(kRecreating, "powering off the earlier import's VM");
          return importStarted(reply, "recreate-off",
                               vim_.startTask("PowerOffVM_Task", vm.ref, {}, deadline),
                               who + ": powering off the earlier import's VM");
        }
        progress(kRecreating, "destroying the earlier import's template");
        return importStarted(reply, "recreate",
                             vim_.startTask("Destroy_Task", vm.ref, {}, deadline),
                             who + ": destroying the earlier import's template");
      }
      if (vm.is_template) {
        writeZoneRow(reply, fd->name, name, folder_path, true, "", "");
        endTask(reply);
        return Status::ok();
      }
      const bool deferred = settings.install_mode != "immediate";
      if (deferred || vm.marker == "installed") {
        // Deferred and manual modes keep the ISO attached: each clone installs on first boot.
        // MarkAsTemplate is no Task: it is done within this call, and the row goes ready.
        if (vm.power_state != "poweredOff") {
          progress(kPoweringOff, "powering off before marking as template");
          return importStarted(reply, "poweroff",
                               vim_.startTask("PowerOffVM_Task", vm.ref, {}, deadline),
                               who + ": powering off");
        }
        vim_.markAsTemplate(vm.ref, deadline);
        writeZoneRow(reply, fd->name, name, folder_path, true, "", "");
        endTask(reply);
        return Status::ok();
      }
      if (vm.marker == "created") {
        XmlWriter w;
        w.open("spec").raw(markerXml("installing:" + std::to_string(nowSeconds()))).close("spec");
        progress(kPoweringOn, "starting the installer");
        return importStarted(reply, "prepare",
                             vim_.startTask("ReconfigVM_Task", vm.ref, w.str(), deadline),
                             who + ": starting the installer");
      }
      if (vm.marker.rfind("installing:", 0) == 0) {
        int64_t since = 0;
        try {
          since = std::stoll(vm.marker.substr(11));
        } catch (const std::exception&) {
          since = nowSeconds();
        }
        const bool seen_on = vm.marker.find(":on") != std::string::npos;
        if (vm.power_state == "poweredOn") {
          if (!seen_on) {
            // Remember that the installer runs, so a later power-off reads as "install done".
            XmlWriter w;
            w.open("spec").raw(markerXml(vm.marker + ":on")).close("spec");
            progress(kInstalling, "installing");
            return importStarted(reply, "mark",
                                 vim_.startTask("ReconfigVM_Task", vm.ref, w.str(), deadline),
                                 who + ": installing");
          }
          if (nowSeconds() - since > settings.install_timeout_seconds) {
            // Terminal until someone acts: asking again finds the same VM, still too late. The
            // VM stays for debugging; deleting it starts the import over.
            const std::string late = "the installer did not power the VM off within " +
                                     std::to_string(settings.install_timeout_seconds) +
                                     " s (spec.template.installTimeoutSeconds)";
            writeZoneRow(reply, fd->name, name, folder_path, false, "InstallTimedOut", late);
            return {Code::kFailedPrecondition, "InstallTimedOut",
                    who + ": " + late + "; VM " + vm.ref.value + " (" + folder_path + "/" + name +
                        ") is kept for debugging: delete it to start the import over"};
          }
          progress(kInstalling, "installing");
          // A token no task carries (IN_PROGRESS needs one): each call looks at the VM again.
          reply.setOperation(std::string(kInstallingToken),
                             who + ": waiting for the installer to power off");
          reply.requeueAfter(kInstallPoll);
          return Status::inProgress("Installing", who + ": waiting for the installer to power off");
        }
        if (!seen_on) {
          progress(kPoweringOn, "powering on the installer");
          return importStarted(reply, "install",
                               vim_.startTask("PowerOnVM_Task", vm.ref, {}, deadline),
                               who + ": powering on the installer");
        }
        // Powered off after the install: detach the ISO so clones do not boot the installer.
        XmlWriter w;
        w.open("spec");
        if (vm.cdrom_key >= 0) {
          w.open("deviceChange")
              .text("operation", "remove")
              .raw(vm.cdrom_xml)
              .close("deviceChange");
        }
        w.raw(markerXml("installed"));
        w.close("spec");
        progress(kRemovingCdrom, "removing the CD-ROM");
        return importStarted(reply, "finish",
                             vim_.startTask("ReconfigVM_Task", vm.ref, w.str(), deadline),
                             who + ": removing the CD-ROM");
      }
      return {Code::kFailedPrecondition, "ForeignVM",
              "a VM named " + name + " already exists in " + folder_path +
                  " and was not created by banlieue; rename or remove it"};
    }

    // Largest free space first among the zone's accessible datastores (by name when equal, so
    // every call picks the same one).
    std::vector<const Inventory::Datastore*> candidates;
    for (const MoRef& r : cluster->datastores) {
      const auto* ds = inventory.datastore(r);
      if (ds != nullptr && ds->accessible) candidates.push_back(ds);
    }
    if (candidates.empty()) {
      return {Code::kFailedPrecondition, "DatastoreNotFound",
              "cluster " + cluster->name + " reaches no accessible datastore"};
    }
    std::stable_sort(candidates.begin(), candidates.end(), [](const auto* a, const auto* b) {
      return a->free_space != b->free_space ? a->free_space > b->free_space : a->name < b->name;
    });
    // The zone's port group: a standard network first (uplink port groups of a distributed
    // switch carry no VMs).
    std::optional<Inventory::Network> zone_network;
    for (const MoRef& r : cluster->networks) {
      if (const auto* n = inventory.network(r); n != nullptr && !n->distributed) {
        zone_network = *n;
        break;
      }
    }
    std::vector<Inventory::Network> networks;
    for (const auto& nic : settings.nics) {
      auto n = nic.network.empty() ? zone_network : inventory.resolveNetwork(*cluster, nic.network);
      if (!n) {
        return {Code::kFailedPrecondition, "NetworkNotFound",
                nic.network.empty()
                    ? "cluster " + cluster->name +
                          " has no standard port group for an adapter of spec.template.network "
                          "without a network"
                    : "spec.template.network '" + nic.network + "' is not reachable from " +
                          cluster->name};
      }
      networks.push_back(*n);
    }
    if (settings.nics.empty() && zone_network) networks.push_back(*zone_network);
    std::error_code ec;
    const auto size = std::filesystem::file_size(request.artifact_path, ec);
    if (ec) {
      return {Code::kFailedPrecondition, "ArtifactMissing",
              "cannot read " + request.artifact_path + ": " + ec.message()};
    }

    // The ISO: a datastore of the zone that holds this file already (same checksum in the
    // name, same size: a cut-short upload does not count) is used as it is, unless
    // forceUpload; else it goes to the emptiest one. One HEAD on the datastore file service
    // per datastore, as govmomi's DatastoreFile.Stat does (no Task to wait for).
    const std::string iso = isoDatastorePath(name, request.artifact_sha256);
    const Inventory::Datastore* datastore = nullptr;
    if (!settings.force_upload) {
      for (const auto* ds : candidates) {
        HttpRequest head;
        head.method = "HEAD";
        head.target = datastoreFileTarget(iso, dc->name, ds->name);
        HttpResponse probe = vim_.client().sendWithSession(head, deadline);
        std::string length;
        for (const auto& v : probe.all("content-length")) length = v;
        if (probe.status == 200 && length == std::to_string(size)) {
          datastore = ds;
          break;
        }
      }
    }
    if (datastore == nullptr) {
      // The datastore announced by the previous call when it is still a candidate, so a
      // change of free space in between does not announce another one.
      datastore = candidates.front();
      for (const auto* ds : candidates) {
        if (ds->name == announced_upload) datastore = ds;
      }
      const int64_t total = static_cast<int64_t>(size);
      if (datastore->name != announced_upload) {
        // Said first, done in the next call: the row shows Uploading while the bytes go.
        progress(kUploading, "uploading the ISO to " + datastore->name, 0, total);
        reply.setOperation(std::string(kUploadToken) + datastore->name,
                           who + ": uploading the ISO to " + datastore->name);
        reply.requeueAfter(std::chrono::milliseconds(100));
        return Status::inProgress("Importing",
                                  who + ": uploading the ISO to [" + datastore->name + "] " + iso);
      }
      if (call.cancelled()) {
        return Status{Code::kCancelled, "Cancelled", who + " was cancelled by the host"};
      }
      vim_.makeDirectory("[" + datastore->name + "] banlieue-images", dc->ref, deadline);
      HttpRequest put;
      put.method = "PUT";
      put.target = datastoreFileTarget(iso, dc->name, datastore->name);
      put.headers = {{"Content-Type", "application/octet-stream"}};
      put.body_file = request.artifact_path;
      HttpResponse uploaded = vim_.client().sendWithSession(put, deadline);
      if (uploaded.status != 200 && uploaded.status != 201) {
        return {Code::kUnavailable, "UploadFailed",
                "uploading the ISO to [" + datastore->name + "] " + iso + " answered HTTP " +
                    std::to_string(uploaded.status)};
      }
    }

    // The folder, then the VM, on the datastore holding the ISO.
    MoRef folder = dc->vm_folder;
    std::string walked = dc->name + "/vm";
    for (const std::string& part : {settings.root_folder, fd->name}) {
      if (part.empty()) continue;
      size_t start = 0;
      while (start <= part.size()) {
        size_t end = part.find('/', start);
        if (end == std::string::npos) end = part.size();
        std::string piece = part.substr(start, end - start);
        start = end + 1;
        if (piece.empty()) continue;
        walked += "/" + piece;
        if (auto found = vim_.findByInventoryPath(walked, deadline)) {
          folder = *found;
        } else {
          folder = vim_.createFolder(folder, piece, deadline);
        }
      }
    }
    const std::string ds_file = "[" + datastore->name + "] " + iso;
    XmlWriter w;
    w.raw(installVmConfigXml(settings, {name, datastore->name, ds_file, networks, build}));
    w.moref("pool", cluster->resource_pool);
    MoRef task = vim_.startTask("CreateVM_Task", folder, w.str(), deadline);
    progress(kCreatingVm, "creating the VM on " + datastore->name);
    return importStarted(reply, "create", task, who + ": creating the VM");
  });
}

Status ImageImporter::remove(const sdk::Call& call, const sdk::DeleteImageRequest& request,
                             const ProviderSpec& provider, sdk::Reply& reply) {
  if (request.image_name.empty() || request.failure_domain.empty()) {
    return {Code::kInvalidArgument, "MissingField",
            "delete_image needs image.metadata.name and failureDomain"};
  }
  // Only what finds the template: a deletion never fails on a template spec the import would
  // refuse (an adapter or controller this build does not make, say).
  const rapidjson::Value* spec_template = json::find(request.image, "spec.template");
  const std::string root_folder = json::stringOr(spec_template, "rootFolder");
  const std::string who =
      "deletion of template " + request.image_name + " in " + request.failure_domain;
  if (json::boolean(spec_template, "retainOnDelete")) {
    // The host does not ask when the VMImage says so (ADR 0037); a caller that does anyway
    // gets the same answer: the template and its ISO stay, and that is success.
    BANLIEUE_LOG(kInfo, who + ": spec.template.retainOnDelete keeps the template and its ISO");
    endTask(reply);
    return Status::ok();
  }
  const Deadline deadline = call.deadline();
  return withVimErrors(who, [&]() -> Status {
    if (auto pending = parseTaskToken(request.operation_token, kDestroyPhase)) {
      if (auto stop = awaitTask(vim_, *pending, "Deleting", who, kPoll, deadline, reply)) {
        return *stop;
      }
      // Done (or forgotten by vCenter): look below whether the template is still there.
    }
    bool iso_done = false;
    if (auto pending = parseTaskToken(request.operation_token, kDeleteIsoPhase)) {
      TaskPoll poll = pollTask(vim_, pending->task, deadline);
      if (poll.state == TaskPoll::State::kRunning) {
        return taskInProgress(reply, *pending, "Deleting", who + ": removing the uploaded ISO",
                              kPoll);
      }
      // Removed, forgotten, or failed (another zone's deletion removed the same file first, or
      // someone did by hand): the template goes next either way; a stray ISO never blocks it.
      if (poll.state == TaskPoll::State::kFailed) {
        BANLIEUE_LOG(kWarn, who + ": removing the uploaded ISO failed: " +
                                (poll.info.error ? std::string(poll.info.error->what()) : "?"));
      }
      iso_done = true;
    }
    Inventory inventory = Inventory::load(vim_, deadline);
    std::vector<FailureDomain> fds = computeFailureDomains(inventory, provider);
    auto fd = std::find_if(fds.begin(), fds.end(), [&](const FailureDomain& f) {
      return f.name == request.failure_domain;
    });
    if (fd == fds.end()) return Status::ok();  // the zone is gone, and with it its template
    const Inventory::Datacenter* dc = inventory.datacenter(fd->datacenter);
    if (dc == nullptr) return Status::ok();
    const std::string folder_path = root_folder.empty() ? fd->name : root_folder + "/" + fd->name;
    std::optional<MoRef> existing = vim_.findByInventoryPath(
        dc->name + "/vm/" + folder_path + "/" + request.image_name, deadline);
    if (!existing) return Status::ok();
    ImportVm vm = readImportVm(vim_, *existing, deadline);
    if (vm.marker.empty()) {
      // Something of that name that no import made: never banlieue's to destroy.
      return {Code::kFailedPrecondition, "NotImportedByBanlieue",
              "VM " + folder_path + "/" + request.image_name +
                  " carries no import marker; it is left alone"};
    }
    if (call.cancelled()) {
      return Status{Code::kCancelled, "Cancelled", who + " was cancelled by the host"};
    }
    if (!vm.iso.empty() && !iso_done) {
      // First the ISO, while the template still names it (a template imported before banlieue
      // kept the path has none: its ISO stays, as before).
      XmlWriter w;
      w.text("name", vm.iso).moref("datacenter", dc->ref);
      MoRef task = vim_.startTask("DeleteDatastoreFile_Task",
                                  vim_.client().content(deadline).file_manager, w.str(), deadline);
      return taskInProgress(reply, {std::string(kDeleteIsoPhase), task}, "Deleting",
                            who + ": removing the uploaded ISO", kPoll);
    }
    MoRef task = vim_.startTask("Destroy_Task", *existing, {}, deadline);
    return taskInProgress(reply, {std::string(kDestroyPhase), task}, "Deleting", who, kPoll);
  });
}

}  // namespace banlieue::vsphere
