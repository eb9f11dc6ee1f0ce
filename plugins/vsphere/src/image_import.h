// Per-zone template import from an ISO (VMImage.status.buildArtifact of kind iso): upload the
// ISO to the zone's datastore (the one of the zone's datastores already holding a file of the
// same checksum and size, else the emptiest; spec.template.forceUpload uploads to the emptiest
// regardless), ensure <rootFolder>/<failure-domain>, create an empty EFI VM on that datastore
// with its disk on the controller asked for (pvscsi), the NICs asked for (vmxnet3 on the zone's
// port group) and the ISO attached, let the installer run (power on, wait for the guest to
// power off, bounded by installTimeoutSeconds) unless installMode defers it, remove the CD-ROM
// and mark the VM as a template. spec.template.forceCreate replaces a template an earlier
// import made instead of adopting it. The state lives in vCenter (the VM, its power state and
// guestinfo.banlieue.import* markers), so every call re-derives where the import is; each
// IN_PROGRESS reply carries status.progress.phase (Uploading, CreatingVM, PoweringOn,
// Installing, RemovingCdrom, PoweringOff, Recreating), which the VMImage's zone row shows.
#pragma once

#include "plugins/vsphere/src/inventory.h"
#include "plugins/vsphere/src/provider_spec.h"
#include "plugins/vsphere/src/vim.h"

#include <banlieue/sdk/provider.h>

#include <optional>
#include <string>
#include <vector>

namespace banlieue::vsphere {

class ImageImporter {
 public:
  explicit ImageImporter(Vim& vim) : vim_(vim) {}

  sdk::Status import(const sdk::Call& call, const sdk::ImportImageRequest& request,
                     const ProviderSpec& provider, sdk::Reply& reply);
  // delete_image (ABI 1.1, ADR 0037): removes the ISO the import recorded on the template, then
  // destroys the zone's template (each a task polled by token) if the import made it (its
  // guestinfo.banlieue.import marker); OK when there is none. With
  // spec.template.retainOnDelete both stay and the answer is OK, without a vCenter call.
  sdk::Status remove(const sdk::Call& call, const sdk::DeleteImageRequest& request,
                     const ProviderSpec& provider, sdk::Reply& reply);

 private:
  Vim& vim_;
};

// One network adapter of the install VM (spec.template.network[]).
struct TemplateNic {
  std::string network;              // empty: the zone's first standard port group
  std::string adapter = "vmxnet3";  // vmxnet3, e1000 or e1000e
  std::optional<int64_t> pci_slot;  // unset: vSphere places the adapter
};

// spec.template of a VMImage as the import acts on it.
struct TemplateSettings {
  std::string root_folder;
  int64_t cpus = 2;
  int64_t memory_mib = 4096;
  int64_t disk_gib = 100;
  std::string disk_type = "thin";
  std::string disk_controller = "pvscsi";  // pvscsi, lsiLogic, lsiLogicSas or nvme
  std::string firmware = "efi";
  std::string guest_id;
  std::vector<TemplateNic> nics;
  std::string install_mode = "immediate";
  int64_t install_timeout_seconds = 1800;
  bool force_upload = false;      // upload even when a zone datastore holds the ISO already
  bool force_create = false;      // replace a template an earlier import made
  bool retain_on_delete = false;  // delete_image leaves the template and its ISO
};

// Reads spec.template (and spec.osFamily for the guest id) of the VMImage `image`. Throws
// sdk::Error (INVALID_ARGUMENT, reason InvalidSpec) naming the field when a value is out of
// range or not one the plugin can build.
TemplateSettings templateSettings(const rapidjson::Value* image);

// What the install VM is made of besides the settings: its name, the datastore of its files
// and disk, the ISO's datastore path, and one resolved network per settings.nics entry.
struct InstallVm {
  std::string name;
  std::string datastore;
  std::string iso_file;  // "[ds] banlieue-images/….iso"
  std::vector<Inventory::Network> networks;
  std::string build;  // which import makes it (artifact checksum, force-reimport value)
};

// CreateVM_Task's <config>: an empty VM with the disk on its controller, the NICs, the ISO as
// CD-ROM and the import's markers in extraConfig. Pure, for the unit tests.
std::string installVmConfigXml(const TemplateSettings& settings, const InstallVm& vm);

// Where an image's ISO lives on a datastore: named by checksum so an identical file is reused
// and a rebuilt one never overwrites a file a template's CD-ROM still holds. Always one file in
// banlieue-images/: the image name and checksum keep only letters and digits.
std::string isoDatastorePath(const std::string& image, const std::string& sha256);

// The HTTP target of a datastore file (vCenter's /folder file service): each segment of
// `datastore_path` and the datacenter and datastore names percent-encoded.
std::string datastoreFileTarget(const std::string& datastore_path, const std::string& datacenter,
                                const std::string& datastore);

}  // namespace banlieue::vsphere
