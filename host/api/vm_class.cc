#include "host/api/vm_class.h"

#include "host/api/declare.h"

namespace banlieue::api {

const Fields<ClassDisk>& ClassDisk::describe() {
  using T = ClassDisk;
  static const Fields<T> f =
      Fields<T>("A disk; the first is the OS disk backed by the image (its size is a floor)")
          .field("name", &T::name, {.required = true, .min_length = 1})
          .field("sizeGiB", &T::size_gib, {.required = true, .minimum = 1, .maximum = 65536})
          .field("storageClass", &T::storage_class,
                 {.description = "A storage class the Provider declares", .required = true})
          .field("provisioning", &T::provisioning,
                 {.enum_values = enums::kDiskProvisioning, .default_json = "\"thin\""});
  return f;
}

const Fields<ClassHardware>& ClassHardware::describe() {
  using T = ClassHardware;
  static const Fields<T> f =
      Fields<T>()
          .field("cpus", &T::cpus, {.required = true, .minimum = 1, .maximum = 256})
          .field("memoryMiB", &T::memory_mib,
                 {.required = true, .minimum = 128, .maximum = 4194304})
          .field("disks", &T::disks,
                 {.required = true, .min_items = 1, .max_items = 32, .map_keys = {"name"}});
  return f;
}

const Fields<ClassInterface>& ClassInterface::describe() {
  using T = ClassInterface;
  static const Fields<T> f =
      Fields<T>()
          .field("name", &T::name, {.required = true, .min_length = 1})
          .field("networkClass", &T::network_class,
                 {.description = "A network class the Provider declares", .required = true})
          .field("ipam", &T::ipam)
          .field("mtu", &T::mtu, {.minimum = 68, .maximum = 65535});
  return f;
}

const Fields<ClassNetwork>& ClassNetwork::describe() {
  using T = ClassNetwork;
  static const Fields<T> f =
      Fields<T>().field("interfaces", &T::interfaces,
                        {.required = true, .min_items = 1, .max_items = 16, .map_keys = {"name"}});
  return f;
}

const Fields<VMClassSpec>& VMClassSpec::describe() {
  using T = VMClassSpec;
  static const Fields<T> f =
      Fields<T>("A machine shape")
          .field("hardware", &T::hardware, {.required = true})
          .field("network", &T::network)
          .field("firmware", &T::firmware,
                 {.enum_values = enums::kFirmware, .default_json = "\"efi\""})
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
          .field("providerClass", &T::provider_class, {.required = true, .min_length = 1})
          .field("kind", &T::kind,
                 {.required = true, .enum_values = {"Template", "BackingFile", "Url"}})
          .field("ref", &T::ref,
                 {.description = "vSphere template name, Proxmox VMID or libvirt volume; "
                                 "ignored for Url"})
          .field("importFrom", &T::import_from)
          .field("checksum", &T::checksum,
                 {.description = "<alg>:<hex>, alg sha256 or sha512; imports fail closed",
                  .pattern = "^(sha256:[0-9a-f]{64}|sha512:[0-9a-f]{128})$"});
  return f;
}

const Fields<TemplateNetwork>& TemplateNetwork::describe() {
  using T = TemplateNetwork;
  static const Fields<T> f =
      Fields<T>()
          .field("network", &T::network)
          .field("adapter", &T::adapter,
                 {.enum_values = {"vmxnet3", "vmxnet2", "e1000", "e1000e"},
                  .default_json = "\"vmxnet3\""})
          .field("pciSlot", &T::pci_slot, {.description = "Default 192 + index", .minimum = 0});
  return f;
}

const Fields<TemplateDisk>& TemplateDisk::describe() {
  using T = TemplateDisk;
  static const Fields<T> f =
      Fields<T>()
          .field("size", &T::size, {.description = "GiB", .minimum = 1, .default_json = "100"})
          .field("type", &T::type,
                 {.enum_values = enums::kDiskProvisioning, .default_json = "\"thin\""})
          .field("controller", &T::controller,
                 {.enum_values = {"pvscsi", "lsiLogic", "lsiLogicSas", "busLogic"},
                  .default_json = "\"pvscsi\""});
  return f;
}

const Fields<ImageTemplate>& ImageTemplate::describe() {
  using T = ImageTemplate;
  static const Fields<T> f =
      Fields<T>("How a Url image becomes a template")
          .field("rootFolder", &T::root_folder,
                 {.description = "Templates land in <rootFolder>/<failure domain>"})
          .field("network", &T::network)
          .field("disk", &T::disk)
          .field("cpus", &T::cpus, {.minimum = 1, .maximum = 256, .default_json = "2"})
          .field("memoryMib", &T::memory_mib,
                 {.minimum = 128, .maximum = 4194304, .default_json = "4096"})
          .field("firmware", &T::firmware,
                 {.enum_values = enums::kFirmware, .default_json = "\"efi\""})
          .field("guestId", &T::guest_id)
          .field("forceUpload", &T::force_upload)
          .field("forceCreate", &T::force_create)
          .field("installTimeoutSeconds", &T::install_timeout_seconds,
                 {.minimum = 1, .default_json = "1800"})
          .field(
              "installMode", &T::install_mode,
              {.enum_values = {"immediate", "deferred", "manual"}, .default_json = "\"immediate\""})
          .field("retainOnDelete", &T::retain_on_delete);
  return f;
}

const Fields<IsoOverlayFile>& IsoOverlayFile::describe() {
  using T = IsoOverlayFile;
  static const Fields<T> f = Fields<T>()
                                 .field("key", &T::key, {.required = true})
                                 .field("path", &T::path, {.required = true});
  return f;
}

const Fields<IsoOverlay>& IsoOverlay::describe() {
  using T = IsoOverlay;
  static const Fields<T> f = Fields<T>("Files from a Secret added to the install ISO")
                                 .field("secretRef", &T::secret_ref, {.required = true})
                                 .field("files", &T::files, {.map_keys = {"path"}});
  return f;
}

const Fields<TrustedBoot>& TrustedBoot::describe() {
  using T = TrustedBoot;
  static const Fields<T> f =
      Fields<T>("Secure-boot keys: PK.auth KEK.auth db.auth db.key db.pem tpm2-pcr-private.pem")
          .field("secretRef", &T::secret_ref, {.required = true});
  return f;
}

const Fields<VMImageSpec>& VMImageSpec::describe() {
  using T = VMImageSpec;
  static const Fields<T> f =
      Fields<T>("A guest image and where each backend finds it")
          .field("osFamily", &T::os_family,
                 {.enum_values = {"linux", "windows", "bsd", "other"}, .default_json = "\"linux\""})
          .field("osDistribution", &T::os_distribution)
          .field("osVersion", &T::os_version)
          .field("architecture", &T::architecture,
                 {.enum_values = {"amd64", "arm64"}, .default_json = "\"amd64\""})
          .field("guestAgent", &T::guest_agent,
                 {.description = "How user data reaches the guest",
                  .enum_values = {"cloud-init", "ignition", "sysprep", "none"},
                  .default_json = "\"cloud-init\""})
          .field("sources", &T::sources, {.map_keys = {"providerClass"}})
          .field("cloudConfigs", &T::cloud_configs,
                 {.description = "Deep-merged in order for Url sources"})
          .field("template", &T::template_)
          .field("isoOverlay", &T::iso_overlay)
          .field("trustedBoot", &T::trusted_boot);
  return f;
}

const Fields<ImageZone>& ImageZone::describe() {
  using T = ImageZone;
  static const Fields<T> f = Fields<T>()
                                 .field("name", &T::name, {.required = true})
                                 .field("ready", &T::ready, {.required = true})
                                 .field("resolvedRef", &T::resolved_ref)
                                 .field("templateFolder", &T::template_folder)
                                 .field("reason", &T::reason)
                                 .field("message", &T::message);
  return f;
}

const Fields<ImageProviderStatus>& ImageProviderStatus::describe() {
  using T = ImageProviderStatus;
  static const Fields<T> f =
      Fields<T>("The image on one Provider, written by that Provider")
          .field("providerName", &T::provider_name, {.required = true})
          .field("providerNamespace", &T::provider_namespace, {.required = true})
          .field("ready", &T::ready, {.required = true})
          .field("resolvedRef", &T::resolved_ref)
          .field("reason", &T::reason)
          .field("message", &T::message)
          .field("zones", &T::zones, {.map_keys = {"name"}});
  return f;
}

const Fields<OciArtifact>& OciArtifact::describe() {
  using T = OciArtifact;
  static const Fields<T> f =
      Fields<T>()
          .field("phase", &T::phase, {.enum_values = {"Pushing", "Ready", "Failed"}})
          .field("reference", &T::reference, {.description = "registry/repo@sha256:..."})
          .field("message", &T::message);
  return f;
}

const Fields<BuildArtifact>& BuildArtifact::describe() {
  using T = BuildArtifact;
  static const Fields<T> f =
      Fields<T>("The image build, written only by banlieue.io/imagebuilder")
          .field("kind", &T::kind, {.enum_values = {"cloudImage", "iso"}})
          .field("phase", &T::phase, {.enum_values = {"Pending", "Building", "Ready", "Failed"}})
          .field("osArtifactRef", &T::os_artifact_ref)
          .field("osArtifactUid", &T::os_artifact_uid)
          .field("pvcRef", &T::pvc_ref)
          .field("file", &T::file)
          .field("reason", &T::reason)
          .field("message", &T::message)
          .field("checksum", &T::checksum)
          .field("ociArtifact", &T::oci_artifact);
  return f;
}

const Fields<VMImageStatus>& VMImageStatus::describe() {
  using T = VMImageStatus;
  static const Fields<T> f = Fields<T>()
                                 .field("perProvider", &T::per_provider,
                                        {.map_keys = {"providerName", "providerNamespace"}})
                                 .field("buildArtifact", &T::build_artifact)
                                 .field("conditions", &T::conditions, conditionsSpec())
                                 .field("observedGeneration", &T::observed_generation);
  return f;
}

BANLIEUE_API_CODEC(VMClass);
BANLIEUE_API_CODEC(VMImage);

std::vector<KindInfo> vmClassKinds() {
  KindInfo vm_class{.group = kGroup,
                    .version = kVersion,
                    .kind = "VMClass",
                    .plural = "vmclasses",
                    .short_names = {"vmc"},
                    .namespaced = false,
                    .description = "A machine shape: CPUs, memory, disks, interfaces, firmware",
                    .columns = {{"CPUs", "integer", ".spec.hardware.cpus"},
                                {"MemoryMiB", "integer", ".spec.hardware.memoryMiB"},
                                {"Firmware", "string", ".spec.firmware"},
                                ageColumn()},
                    .spec_schema = &schemaOf<VMClassSpec>,
                    .spec_required = true};
  KindInfo image{.group = kGroup,
                 .version = kVersion,
                 .kind = "VMImage",
                 .plural = "vmimages",
                 .short_names = {"vmi"},
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
