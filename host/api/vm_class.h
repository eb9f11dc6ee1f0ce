// banlieue.io/v1alpha1 VMClass and VMImage: the cluster-scoped shape and image a
// VirtualMachine names.
#pragma once

#include "host/api/common.h"

namespace banlieue::api {

struct ClassDisk {
  std::string name;
  int32_t size_gib = 0;
  std::string storage_class;
  std::string provisioning = "thin";
  static const Fields<ClassDisk>& describe();
};

struct ClassHardware {
  int32_t cpus = 0;
  int32_t memory_mib = 0;
  std::vector<ClassDisk> disks;
  static const Fields<ClassHardware>& describe();
};

struct ClassInterface {
  std::string name;
  std::string network_class;
  IpamShape ipam;
  std::optional<int32_t> mtu;
  static const Fields<ClassInterface>& describe();
};

struct ClassNetwork {
  std::vector<ClassInterface> interfaces;
  static const Fields<ClassNetwork>& describe();
};

struct VMClassSpec {
  ClassHardware hardware;
  std::optional<ClassNetwork> network;
  std::string firmware = "efi";
  std::vector<std::string> features;
  bool tpm_enabled = false;
  static const Fields<VMClassSpec>& describe();
};

// A Provider with at least one failure domain whose capabilities satisfy the class.
struct ClassProvider {
  std::string provider_name;
  std::string provider_namespace;
  std::vector<std::string> failure_domains;
  static const Fields<ClassProvider>& describe();
};

// Which Providers can serve the class (the controller computes it from their failure domains;
// a VM still needs its image ready and its selectors matched there).
struct VMClassStatus {
  std::vector<ClassProvider> providers;
  int32_t provider_count = 0;
  std::vector<Condition> conditions;
  int64_t observed_generation = 0;
  static const Fields<VMClassStatus>& describe();
};

using VMClass = Resource<VMClassSpec, VMClassStatus>;

struct ImageSource {
  std::string provider_class;
  std::string kind;
  std::string ref;
  std::string import_from;
  std::string checksum;
  static const Fields<ImageSource>& describe();
};

struct TemplateNetwork {
  std::string network;
  std::string adapter = "vmxnet3";
  std::optional<int32_t> pci_slot;
  static const Fields<TemplateNetwork>& describe();
};

struct TemplateDisk {
  int32_t size = 100;
  std::string type = "thin";
  std::string controller = "pvscsi";
  static const Fields<TemplateDisk>& describe();
};

struct ImageTemplate {
  std::string root_folder;
  std::vector<TemplateNetwork> network;
  std::optional<TemplateDisk> disk;
  int32_t cpus = 2;
  int32_t memory_mib = 4096;
  std::string firmware = "efi";
  std::string guest_id;
  bool force_upload = false;
  bool force_create = false;
  int32_t install_timeout_seconds = 1800;
  std::string install_mode = "immediate";
  bool retain_on_delete = false;
  static const Fields<ImageTemplate>& describe();
};

struct IsoOverlayFile {
  std::string key;
  std::string path;
  static const Fields<IsoOverlayFile>& describe();
};

struct IsoOverlay {
  LocalObjectReference secret_ref;
  std::vector<IsoOverlayFile> files;
  static const Fields<IsoOverlay>& describe();
};

struct TrustedBoot {
  LocalObjectReference secret_ref;
  static const Fields<TrustedBoot>& describe();
};

struct VMImageSpec {
  std::string os_family = "linux";
  std::string os_distribution;
  std::string os_version;
  std::string architecture = "amd64";
  std::string guest_agent = "cloud-init";
  std::vector<ImageSource> sources;
  std::vector<CloudConfigSource> cloud_configs;
  std::optional<ImageTemplate> template_;
  std::optional<IsoOverlay> iso_overlay;
  std::optional<TrustedBoot> trusted_boot;
  static const Fields<VMImageSpec>& describe();
};

// How far an import in one failure domain has come, while its Job runs.
struct ImageImportProgress {
  std::string phase;
  int32_t percent = 0;
  int64_t bytes_done = 0;
  int64_t bytes_total = 0;
  static const Fields<ImageImportProgress>& describe();
};

// One row of a Provider's image status: the image in one failure domain, or, for a backend
// that imports into several targets of one failure domain (libvirt: one per storage pool), in
// one target there. A per-target row is named <failureDomain>/<target> and carries both.
struct ImageZone {
  std::string name;
  std::string failure_domain;  // set on per-target rows; empty: `name` is the failure domain
  std::string target;          // the import target (libvirt: the pool); empty: none
  bool ready = false;
  std::string resolved_ref;
  std::string template_folder;
  std::string reason;
  std::string message;
  std::optional<ImageImportProgress> progress;
  std::string operation_token;  // a delete_image task in flight (the VMImage is being deleted)
  // The failure domain the row is about: failure_domain when set, else name.
  const std::string& failureDomainName() const {
    return failure_domain.empty() ? name : failure_domain;
  }
  static const Fields<ImageZone>& describe();
};

// One row per Provider, written by that Provider's runtime: a list map so rows from several
// field managers coexist.
struct ImageProviderStatus {
  std::string provider_name;
  std::string provider_namespace;
  bool ready = false;
  std::string resolved_ref;
  std::string reason;
  std::string message;
  std::vector<ImageZone> zones;
  static const Fields<ImageProviderStatus>& describe();
};

struct OciArtifact {
  std::string phase;
  std::string reference;
  std::string message;
  static const Fields<OciArtifact>& describe();
};

struct BuildArtifact {
  std::string kind;
  std::string phase;
  std::string os_artifact_ref;
  std::string os_artifact_uid;
  std::string pvc_ref;
  std::string file;
  std::string reason;
  std::string message;
  std::string checksum;
  std::optional<OciArtifact> oci_artifact;
  static const Fields<BuildArtifact>& describe();
};

struct VMImageStatus {
  std::vector<ImageProviderStatus> per_provider;
  std::optional<BuildArtifact> build_artifact;
  std::vector<Condition> conditions;
  int64_t observed_generation = 0;
  static const Fields<VMImageStatus>& describe();
};

using VMImage = Resource<VMImageSpec, VMImageStatus>;

}  // namespace banlieue::api
