// banlieue.io/v1alpha1 Provider (one backend instance) and ProviderClass (how a backend's
// provider workload runs: plugin, image, deployment mode, pod shape).
#pragma once

#include "host/api/common.h"

namespace banlieue::api {

struct ProviderConnection {
  std::string endpoint;
  std::optional<LocalObjectReference> credentials_ref;
  bool insecure_skip_tls_verify = false;
  std::optional<CABundleSource> ca_bundle;
  bool allow_test_driver = false;
  static const Fields<ProviderConnection>& describe();
};

struct ZoneTarget {
  std::string datacenter;
  std::string cluster;
  StringMap target;
  static const Fields<ZoneTarget>& describe();
};

struct StorageClassCapability {
  std::string name;
  StringMap target;
  std::vector<ZoneTarget> per_zone;
  static const Fields<StorageClassCapability>& describe();
};

struct Subnet {
  std::string gateway;
  std::vector<std::string> nameservers;
  std::string domain;
  static const Fields<Subnet>& describe();
};

struct ZoneSubnet {
  std::string datacenter;
  std::string cluster;
  Subnet subnet;
  static const Fields<ZoneSubnet>& describe();
};

struct NetworkClassCapability {
  std::string name;
  StringMap target;
  std::vector<ZoneTarget> per_zone;
  std::optional<Subnet> subnet;
  std::vector<ZoneSubnet> per_zone_subnet;
  static const Fields<NetworkClassCapability>& describe();
};

struct ProviderCapabilities {
  std::vector<StorageClassCapability> storage_classes;
  std::vector<NetworkClassCapability> network_classes;
  std::vector<std::string> features;
  static const Fields<ProviderCapabilities>& describe();
};

struct FailureDomainNameOverride {
  std::string datacenter;
  std::string cluster;
  std::string name;
  static const Fields<FailureDomainNameOverride>& describe();
};

struct Attestation {
  CABundleSource ek_trust_bundle;
  static const Fields<Attestation>& describe();
};

// Creates a Provider runs at once when its spec does not say (docs/adr/0049).
inline constexpr int32_t kDefaultMaxConcurrentCreates = 16;

struct ProviderSpec {
  LocalObjectReference provider_class_ref;
  ProviderConnection connection;
  std::optional<ProviderCapabilities> capabilities;
  bool paused = false;
  bool use_content_library = false;
  std::vector<FailureDomainNameOverride> failure_domain_name_overrides;
  std::optional<Attestation> attestation;
  // One of the class's status.machineKinds by kind name; empty: the class's machineKind.
  std::string machine_kind;
  // Backend creates this Provider runs at once (docs/adr/0049); unset:
  // kDefaultMaxConcurrentCreates.
  std::optional<int32_t> max_concurrent_creates;
  static const Fields<ProviderSpec>& describe();
};

struct FailureDomainAttributes {
  std::vector<std::string> available_storage_classes;
  std::vector<std::string> available_network_classes;
  std::vector<std::string> features;
  StringMap raw;
  // Targets an image is imported into one by one (libvirt: its storage pools); empty: one
  // import per failure domain.
  std::vector<std::string> import_targets;
  static const Fields<FailureDomainAttributes>& describe();
};

struct ProviderFailureDomain {
  std::string name;
  StringMap labels;
  FailureDomainAttributes attributes;
  static const Fields<ProviderFailureDomain>& describe();
};

struct ProviderWorkload {
  std::string mode = "Managed";
  std::string deployment_name;
  std::string namespace_;
  std::optional<int32_t> ready_replicas;
  std::optional<int64_t> observed_generation;
  static const Fields<ProviderWorkload>& describe();
};

struct ProviderStatus {
  std::vector<ProviderFailureDomain> failure_domains;
  std::vector<Condition> conditions;
  std::optional<ProviderWorkload> workload;
  std::vector<std::string> ek_ca_certificates;
  int64_t observed_generation = 0;
  static const Fields<ProviderStatus>& describe();
};

using Provider = Resource<ProviderSpec, ProviderStatus>;

struct PluginRef {
  std::string path;
  std::string sha256;  // pin of the library's content; empty: none (docs/adr/0025)
  static const Fields<PluginRef>& describe();
};

struct ImagePullSecret {
  std::string name;
  static const Fields<ImagePullSecret>& describe();
};

struct ContainerImage {
  std::string repository;
  std::string tag;
  std::string digest;
  std::string pull_policy;
  std::vector<ImagePullSecret> pull_secrets;
  static const Fields<ContainerImage>& describe();
};

struct LoggingSpec {
  std::string level;
  std::string format;
  static const Fields<LoggingSpec>& describe();
};

struct ProviderClassSpec {
  std::string backend;
  std::optional<PluginRef> plugin;
  std::optional<ContainerImage> image;
  std::string deployment = "Managed";
  std::string workload_namespace;
  int32_t replicas = 1;
  std::optional<ResourceRequirements> resources;
  StringMap node_selector;
  std::vector<Toleration> tolerations;
  std::optional<LoggingSpec> logging;
  std::vector<PolicyRule> additional_rules;
  bool paused = false;
  static const Fields<ProviderClassSpec>& describe();
};

// The infrastructure kind a VirtualMachine on this class's Providers becomes, as the plugin's
// provider.json declares it (its first `infrastructure` entry). Published by the operator, read
// by the controller, so no list of infra kinds is compiled into either.
struct InfrastructureKind {
  std::string api_version;  // e.g. infrastructure.banlieue.io/v1beta2
  std::string kind;         // e.g. LibvirtMachine
  static const Fields<InfrastructureKind>& describe();
};

// What a provider pod of the class loaded and serves, published by the pod itself once its
// plugin is loaded (docs/adr/0043): the operator and the controller need no copy of the plugin.
struct PublishedPlugin {
  std::string name;     // provider.json name (= the class's backend)
  std::string version;  // the plugin's providerVersion
  std::string abi;      // the table's ABI version, "1.3"
  std::string sha256;   // of the library the pod loaded
  std::vector<InfrastructureKind> infrastructure_kinds;
  std::vector<std::string> operations;  // describe's operations the plugin serves
  std::vector<std::string> features;
  int64_t observed_generation = 0;  // the class's metadata.generation the pod resolved it from
  // The finalizer the pod's provider puts on infrastructure objects before any backend work;
  // the controller creates them carrying it (docs/adr/0056). Empty from pods older than it.
  std::string machine_finalizer;
  static const Fields<PublishedPlugin>& describe();
};

struct ProviderClassStatus {
  std::vector<Condition> conditions;
  std::optional<InfrastructureKind> machine_kind;
  std::vector<InfrastructureKind> machine_kinds;
  std::optional<PublishedPlugin> plugin;
  int32_t providers = 0;
  int64_t observed_generation = 0;
  static const Fields<ProviderClassStatus>& describe();
};

using ProviderClass = Resource<ProviderClassSpec, ProviderClassStatus>;

}  // namespace banlieue::api
