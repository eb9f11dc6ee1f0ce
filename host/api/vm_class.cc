#include "host/api/vm_class.h"

#include "host/api/declare.h"

namespace banlieue::api {

const Fields<ClassDisk>& ClassDisk::describe() {
  using T = ClassDisk;
  static const Fields<T> f =
      Fields<T>("A disk; the first is the OS disk backed by the image (its size is a floor)")
          .field("name", &T::name,
                 {.description = "Disk name, unique in the class; VMs override sizes by it",
                  .required = true,
                  .min_length = 1})
          .field("sizeGiB", &T::size_gib,
                 {.description = "Size in GiB", .required = true, .minimum = 1, .maximum = 65536})
          .field("storageClass", &T::storage_class,
                 {.description = "A storage class the Provider declares", .required = true})
          .field("provisioning", &T::provisioning,
                 {.description = "thin allocates on write; thick and eagerZeroed allocate up front",
                  .enum_values = enums::kDiskProvisioning,
                  .default_json = "\"thin\""});
  return f;
}

const Fields<ClassHardware>& ClassHardware::describe() {
  using T = ClassHardware;
  static const Fields<T> f =
      Fields<T>("Virtual hardware of every VM of the class")
          .field("cpus", &T::cpus,
                 {.description = "Virtual CPUs", .required = true, .minimum = 1, .maximum = 256})
          .field("memoryMiB", &T::memory_mib,
                 {.description = "Memory in MiB",
                  .required = true,
                  .minimum = 128,
                  .maximum = 4194304})
          .field("disks", &T::disks,
                 {.description = "Disks in boot order; the first is the OS disk",
                  .required = true,
                  .min_items = 1,
                  .max_items = 32,
                  .map_keys = {"name"}});
  return f;
}

const Fields<ClassInterface>& ClassInterface::describe() {
  using T = ClassInterface;
  static const Fields<T> f =
      Fields<T>("A network interface")
          .field("name", &T::name,
                 {.description = "Interface name, unique in the class; VMs address it by name",
                  .required = true,
                  .min_length = 1})
          .field("networkClass", &T::network_class,
                 {.description = "A network class the Provider declares", .required = true})
          .field("ipam", &T::ipam, {.description = "How the interface gets its address"})
          .field("mtu", &T::mtu,
                 {.description = "MTU in bytes; the network's when absent",
                  .minimum = 68,
                  .maximum = 65535});
  return f;
}

const Fields<ClassNetwork>& ClassNetwork::describe() {
  using T = ClassNetwork;
  static const Fields<T> f = Fields<T>("The VM's network interfaces")
                                 .field("interfaces", &T::interfaces,
                                        {.description = "Interfaces in device order",
                                         .required = true,
                                         .min_items = 1,
                                         .max_items = 16,
                                         .map_keys = {"name"}});
  return f;
}

const Fields<VMClassSpec>& VMClassSpec::describe() {
  using T = VMClassSpec;
  static const Fields<T> f =
      Fields<T>("A machine shape")
          .field("hardware", &T::hardware,
                 {.description = "CPUs, memory and disks", .required = true})
          .field("network", &T::network, {.description = "Network interfaces; none when absent"})
          .field("firmware", &T::firmware,
                 {.description = "bios, efi, or efi-secure (needs the efiSecureBoot feature)",
                  .enum_values = enums::kFirmware,
                  .default_json = "\"efi\""})
          .field("features", &T::features,
                 {.description = "Failure-domain features the VM requires", .set = true})
          .field("tpmEnabled", &T::tpm_enabled,
                 {.description = "Attach a virtual TPM; needs the failure-domain feature vtpm"});
  return f;
}

const Fields<ImageSource>& ImageSource::describe() {
  using T = ImageSource;
  static const Fields<T> f =
      Fields<T>("Where the image comes from for one ProviderClass")
          .field("providerClass", &T::provider_class,
                 {.description = "The ProviderClass (backend) this source is for",
                  .required = true,
                  .min_length = 1})
          .field("kind", &T::kind,
                 {.description = "Template: an existing template or VM; BackingFile: an existing "
                                 "volume; Url: built and imported by banlieue",
                  .required = true,
                  .enum_values = {"Template", "BackingFile", "Url"}})
          .field("ref", &T::ref,
                 {.description = "vSphere template name, Proxmox VMID or libvirt volume; "
                                 "ignored for Url"})
          .field("importFrom", &T::import_from,
                 {.description = "For Url: the Kairos OCI image the artifact is built from"})
          .field("checksum", &T::checksum,
                 {.description = "<alg>:<hex>, alg sha256 or sha512; imports fail closed",
                  .pattern = "^(sha256:[0-9a-f]{64}|sha512:[0-9a-f]{128})$"});
  return f;
}

const Fields<TemplateNetwork>& TemplateNetwork::describe() {
  using T = TemplateNetwork;
  static const Fields<T> f =
      Fields<T>("A network adapter of the template")
          .field("network", &T::network,
                 {.description = "vSphere network the adapter joins; empty: the zone's first "
                                 "standard port group"})
          .field("adapter", &T::adapter,
                 {.description = "Adapter model",
                  .enum_values = {"vmxnet3", "vmxnet2", "e1000", "e1000e"},
                  .default_json = "\"vmxnet3\""})
          .field("pciSlot", &T::pci_slot,
                 {.description = "PCI slot number of the adapter (vSphere's pciSlotNumber, which "
                                 "the guest's interface name follows, e.g. 192: ens192); unset: "
                                 "vSphere chooses",
                  .minimum = 0});
  return f;
}

const Fields<TemplateDisk>& TemplateDisk::describe() {
  using T = TemplateDisk;
  static const Fields<T> f =
      Fields<T>("The template's disk")
          .field("size", &T::size,
                 {.description = "Size in GiB", .minimum = 1, .default_json = "100"})
          .field("type", &T::type,
                 {.description = "Provisioning of the disk",
                  .enum_values = enums::kDiskProvisioning,
                  .default_json = "\"thin\""})
          .field("controller", &T::controller,
                 {.description = "Controller model the disk hangs off",
                  .enum_values = {"pvscsi", "lsiLogic", "lsiLogicSas", "busLogic", "nvme"},
                  .default_json = "\"pvscsi\""});
  return f;
}

const Fields<ImageTemplate>& ImageTemplate::describe() {
  using T = ImageTemplate;
  static const Fields<T> f =
      Fields<T>("How a Url image becomes a template")
          .field("rootFolder", &T::root_folder,
                 {.description = "Templates land in <rootFolder>/<failure domain>"})
          .field("network", &T::network,
                 {.description = "Network adapters of the install VM and its template; none: one "
                                 "vmxnet3 adapter on the zone's first standard port group"})
          .field("disk", &T::disk, {.description = "Disk of the install VM and its template"})
          .field("cpus", &T::cpus,
                 {.description = "Virtual CPUs of the install VM",
                  .minimum = 1,
                  .maximum = 256,
                  .default_json = "2"})
          .field("memoryMib", &T::memory_mib,
                 {.description = "Memory of the install VM in MiB",
                  .minimum = 128,
                  .maximum = 4194304,
                  .default_json = "4096"})
          .field("firmware", &T::firmware,
                 {.description = "Firmware of the install VM and its template",
                  .enum_values = enums::kFirmware,
                  .default_json = "\"efi\""})
          .field("guestId", &T::guest_id,
                 {.description = "vSphere guest OS identifier; derived from osFamily when empty"})
          .field("forceUpload", &T::force_upload,
                 {.description = "Upload the install ISO even when a datastore of the zone "
                                 "already holds it (same checksum and size)"})
          .field("forceCreate", &T::force_create,
                 {.description = "Replace a template an earlier import made (of another "
                                 "artifact, or before another banlieue.io/force-reimport value) "
                                 "instead of adopting it"})
          .field("installTimeoutSeconds", &T::install_timeout_seconds,
                 {.description = "How long the unattended install may take; past it the zone "
                                 "reads InstallTimedOut and the install VM is kept",
                  .minimum = 1,
                  .default_json = "1800"})
          .field("installMode", &T::install_mode,
                 {.description = "immediate installs into a template once; deferred and manual "
                                 "boot each VM from the install ISO",
                  .enum_values = {"immediate", "deferred", "manual"},
                  .default_json = "\"immediate\""})
          .field(
              "retainOnDelete", &T::retain_on_delete,
              {.description = "Keep the imported templates and volumes on every backend when the "
                              "VMImage is deleted"});
  return f;
}

const Fields<IsoOverlayFile>& IsoOverlayFile::describe() {
  using T = IsoOverlayFile;
  static const Fields<T> f =
      Fields<T>("One Secret key written as one file")
          .field("key", &T::key, {.description = "Key in the Secret", .required = true})
          .field("path", &T::path,
                 {.description = "Absolute path of the file on the ISO", .required = true});
  return f;
}

const Fields<IsoOverlay>& IsoOverlay::describe() {
  using T = IsoOverlay;
  static const Fields<T> f =
      Fields<T>(
          "Files from a Secret laid onto the built ISO (ISO builds only; the Secret lives in "
          "the build namespace and only its key names are read by banlieue)")
          .field("secretRef", &T::secret_ref,
                 {.description =
                      "Secret in the build namespace (banlieue-imagebuild) holding the files",
                  .required = true})
          .field(
              "files", &T::files,
              {.description = "Which keys go where; every key when empty", .map_keys = {"path"}});
  return f;
}

const Fields<TrustedBoot>& TrustedBoot::describe() {
  using T = TrustedBoot;
  static const Fields<T> f =
      Fields<T>(
          "A signed UKI ISO instead of a plain one, signed with the Secret's keys PK.auth "
          "KEK.auth db.auth db.key db.pem tpm2-pcr-private.pem (only their names are read by "
          "banlieue); not with isoOverlay")
          .field("secretRef", &T::secret_ref,
                 {.description =
                      "Secret in the build namespace (banlieue-imagebuild) holding the keys",
                  .required = true});
  return f;
}

const Fields<VMImageSpec>& VMImageSpec::describe() {
  using T = VMImageSpec;
  static const Fields<T> f =
      Fields<T>("A guest image and where each backend finds it")
          .field("osFamily", &T::os_family,
                 {.description = "Guest OS family; backends pick guest settings from it",
                  .enum_values = {"linux", "windows", "bsd", "other"},
                  .default_json = "\"linux\""})
          .field("osDistribution", &T::os_distribution,
                 {.description = "Distribution name, e.g. ubuntu; informational"})
          .field("osVersion", &T::os_version,
                 {.description = "Distribution version, e.g. 22.04; informational"})
          .field("architecture", &T::architecture,
                 {.description = "CPU architecture of the image",
                  .enum_values = {"amd64", "arm64"},
                  .default_json = "\"amd64\""})
          .field("guestAgent", &T::guest_agent,
                 {.description = "How user data reaches the guest",
                  .enum_values = {"cloud-init", "ignition", "sysprep", "none"},
                  .default_json = "\"cloud-init\""})
          .field("sources", &T::sources,
                 {.description = "One source per ProviderClass; a backend without one cannot run "
                                 "the image",
                  .map_keys = {"providerClass"}})
          .field("cloudConfigs", &T::cloud_configs,
                 {.description = "Deep-merged in order for Url sources"})
          .field("template", &T::template_,
                 {.description = "vSphere: how a Url image is installed into a template"})
          .field("isoOverlay", &T::iso_overlay, {.description = "Extra files on the install ISO"})
          .field("trustedBoot", &T::trusted_boot,
                 {.description = "Keys for a signed, measured boot of the built image"});
  return f;
}

const Fields<ImageImportProgress>& ImageImportProgress::describe() {
  using T = ImageImportProgress;
  static const Fields<T> f =
      Fields<T>("How far the import Job has come (read from its log while it runs)")
          .field("phase", &T::phase,
                 {.description = "Verifying (the checksum), then the backend's own phase "
                                 "(Uploading, Importing, Installing, ...)"})
          .field("percent", &T::percent,
                 {.description = "Percent of the phase done", .minimum = 0, .maximum = 100})
          .field("bytesDone", &T::bytes_done, {.description = "Bytes done in the phase"})
          .field("bytesTotal", &T::bytes_total,
                 {.description = "Bytes in the phase; 0 when the backend does not say"});
  return f;
}

const Fields<ImageZone>& ImageZone::describe() {
  using T = ImageZone;
  static const Fields<T> f =
      Fields<T>("The image in one failure domain of the Provider")
          .field("name", &T::name,
                 {.description = "Failure domain name, or <failureDomain>/<target> for an "
                                 "import into one target of the failure domain",
                  .required = true})
          .field("failureDomain", &T::failure_domain,
                 {.description = "The failure domain of a per-target row; unset: name is the "
                                 "failure domain"})
          .field("target", &T::target,
                 {.description = "The import target of the row (libvirt: the storage pool), "
                                 "from the failure domain's attributes.importTargets"})
          .field("ready", &T::ready,
                 {.description = "VMs can be made from the image there", .required = true})
          .field("resolvedRef", &T::resolved_ref,
                 {.description = "The backend's name for the image there"})
          .field("templateFolder", &T::template_folder,
                 {.description = "vSphere folder holding the template"})
          .field("reason", &T::reason, {.description = "CamelCase reason when not ready"})
          .field("message", &T::message, {.description = "Human-readable detail"})
          .field("progress", &T::progress,
                 {.description = "While the import runs: its phase, percent and bytes",
                  .nullable = true})
          .field("operationToken", &T::operation_token,
                 {.description = "While the VMImage is being deleted: the backend task "
                                 "removing the image there"});
  return f;
}

const Fields<ImageProviderStatus>& ImageProviderStatus::describe() {
  using T = ImageProviderStatus;
  static const Fields<T> f =
      Fields<T>("The image on one Provider, written by that Provider")
          .field("providerName", &T::provider_name,
                 {.description = "Name of the Provider", .required = true})
          .field("providerNamespace", &T::provider_namespace,
                 {.description = "Namespace of the Provider", .required = true})
          .field("ready", &T::ready,
                 {.description = "Ready in every zone row of the Provider (each failure "
                                 "domain, and each import target of one)",
                  .required = true})
          .field("resolvedRef", &T::resolved_ref,
                 {.description = "The backend's name for the image, when the same in every zone"})
          .field("reason", &T::reason, {.description = "CamelCase reason when not ready"})
          .field("message", &T::message, {.description = "Human-readable detail"})
          .field("zones", &T::zones,
                 {.description = "The image per failure domain", .map_keys = {"name"}});
  return f;
}

const Fields<OciArtifact>& OciArtifact::describe() {
  using T = OciArtifact;
  static const Fields<T> f =
      Fields<T>("The built artifact pushed to an OCI registry")
          .field("phase", &T::phase,
                 {.description = "Where the push stands",
                  .enum_values = {"Pushing", "Ready", "Failed"}})
          .field("reference", &T::reference, {.description = "registry/repo@sha256:..."})
          .field("message", &T::message, {.description = "Human-readable detail"});
  return f;
}

const Fields<BuildArtifact>& BuildArtifact::describe() {
  using T = BuildArtifact;
  static const Fields<T> f =
      Fields<T>("The image build, written only by banlieue.io/imagebuilder")
          .field("kind", &T::kind,
                 {.description = "cloudImage: a disk image; iso: an installer ISO",
                  .enum_values = {"cloudImage", "iso"}})
          .field("phase", &T::phase,
                 {.description = "Where the build stands",
                  .enum_values = {"Pending", "Building", "Ready", "Failed"}})
          .field("osArtifactRef", &T::os_artifact_ref,
                 {.description = "Name of the kairos-operator OSArtifact doing the build"})
          .field("osArtifactUid", &T::os_artifact_uid,
                 {.description = "UID of that OSArtifact; a new one means a new build"})
          .field("pvcRef", &T::pvc_ref,
                 {.description = "PersistentVolumeClaim holding the artifact"})
          .field("file", &T::file, {.description = "Artifact file name in that claim"})
          .field("reason", &T::reason, {.description = "CamelCase reason when not Ready"})
          .field("message", &T::message, {.description = "Human-readable detail"})
          .field("checksum", &T::checksum,
                 {.description = "sha256:<hex> of the artifact; imports verify it"})
          .field("ociArtifact", &T::oci_artifact,
                 {.description = "The artifact in an OCI registry, when pushed there"});
  return f;
}

const Fields<VMImageStatus>& VMImageStatus::describe() {
  using T = VMImageStatus;
  static const Fields<T> f =
      Fields<T>("Where the image is ready, and its build")
          .field("perProvider", &T::per_provider,
                 {.description = "One row per Provider that serves the image",
                  .map_keys = {"providerName", "providerNamespace"}})
          .field("buildArtifact", &T::build_artifact,
                 {.description = "The artifact built for Url sources"})
          .field("conditions", &T::conditions,
                 conditionsSpec("Ready: the image is ready on at least one Provider"))
          .field("observedGeneration", &T::observed_generation,
                 {.description = "metadata.generation this status was computed from"});
  return f;
}

const Fields<ClassProvider>& ClassProvider::describe() {
  using T = ClassProvider;
  static const Fields<T> f =
      Fields<T>("A Provider that can serve the class")
          .field("providerName", &T::provider_name,
                 {.description = "The Provider's name", .required = true})
          .field("providerNamespace", &T::provider_namespace,
                 {.description = "The Provider's namespace", .required = true})
          .field("failureDomains", &T::failure_domains,
                 {.description = "Its failure domains whose storage classes, network classes, "
                                 "features and firmware satisfy the class"});
  return f;
}

const Fields<VMClassStatus>& VMClassStatus::describe() {
  using T = VMClassStatus;
  static const Fields<T> f =
      Fields<T>("Which Providers can serve the class")
          .field("providers", &T::providers,
                 {.description = "Providers with at least one failure domain that satisfies the "
                                 "class; a VM also needs its image ready and its selectors "
                                 "matched there",
                  .map_keys = {"providerNamespace", "providerName"}})
          .field("providerCount", &T::provider_count,
                 {.description = "How many Providers can serve the class"})
          .field("conditions", &T::conditions,
                 conditionsSpec("Ready: at least one Provider can serve the class; when none "
                                "can, the message says what each one lacks"))
          .field("observedGeneration", &T::observed_generation,
                 {.description = "metadata.generation this status was computed from"});
  return f;
}

BANLIEUE_API_CODEC(VMClass);
BANLIEUE_API_CODEC(VMImage);

std::vector<KindInfo> vmClassKinds() {
  KindInfo vm_class{.group = kGroup,
                    .version = kVersion,
                    .kind = "VMClass",
                    .plural = "vmclasses",
                    .short_names = {"bvmclass"},
                    .namespaced = false,
                    .description = "A machine shape: CPUs, memory, disks, interfaces, firmware",
                    .columns = {{"CPUs", "integer", ".spec.hardware.cpus"},
                                {"MemoryMiB", "integer", ".spec.hardware.memoryMiB"},
                                {"Firmware", "string", ".spec.firmware"},
                                {"Providers", "integer", ".status.providerCount",
                                 "How many Providers can serve the class"},
                                readyColumn(),
                                reasonColumn(),
                                ageColumn()},
                    .spec_schema = &schemaOf<VMClassSpec>,
                    .status_schema = &schemaOf<VMClassStatus>,
                    .spec_required = true};
  KindInfo image{.group = kGroup,
                 .version = kVersion,
                 .kind = "VMImage",
                 .plural = "vmimages",
                 .short_names = {"bvmimage"},
                 .namespaced = false,
                 .description = "A guest image and its per-backend sources",
                 .columns = {{"OS", "string", ".spec.osDistribution"},
                             {"Version", "string", ".spec.osVersion"},
                             {"Arch", "string", ".spec.architecture"},
                             readyColumn(),
                             ageColumn()},
                 .spec_schema = &schemaOf<VMImageSpec>,
                 .status_schema = &schemaOf<VMImageStatus>,
                 .spec_required = true};
  return {vm_class, image};
}

}  // namespace banlieue::api
