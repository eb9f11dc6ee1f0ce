#include "host/api/provider.h"

#include "host/api/declare.h"

namespace banlieue::api {

const Fields<ProviderConnection>& ProviderConnection::describe() {
  using T = ProviderConnection;
  static const Fields<T> f =
      Fields<T>("How the provider reaches its backend")
          .field("endpoint", &T::endpoint,
                 {.description = "e.g. https://vc/sdk, https://pve:8006, qemu+tls://host/system",
                  .required = true,
                  .min_length = 1})
          .field("credentialsRef", &T::credentials_ref,
                 {.description = "Secret in the Provider's namespace holding the credentials"})
          .field("insecureSkipTLSVerify", &T::insecure_skip_tls_verify,
                 {.description = "Do not verify the backend's certificate (testing only)"})
          .field("caBundle", &T::ca_bundle,
                 {.description = "CA certificates that verify the backend; the system's when "
                                 "absent"})
          .field("allowTestDriver", &T::allow_test_driver,
                 {.description = "Accept a backend driver that only simulates VMs, such as "
                                 "libvirt's test:// (testing only; refused otherwise)"});
  return f;
}

const Fields<ZoneTarget>& ZoneTarget::describe() {
  using T = ZoneTarget;
  static const Fields<T> f =
      Fields<T>("A target for one (datacenter, cluster) zone")
          .field("datacenter", &T::datacenter,
                 {.description = "Datacenter of the zone", .required = true})
          .field("cluster", &T::cluster, {.description = "Cluster of the zone", .required = true})
          .field("target", &T::target,
                 {.description = "Backend target in that zone, keyed like the class's target"});
  return f;
}

const Fields<StorageClassCapability>& StorageClassCapability::describe() {
  using T = StorageClassCapability;
  static const Fields<T> f =
      Fields<T>("A storage class and its backend target (e.g. datastore, pool, storage)")
          .field("name", &T::name,
                 {.description = "Storage class name that VMClass disks use",
                  .required = true,
                  .min_length = 1})
          .field("target", &T::target,
                 {.description = "Backend target, e.g. {datastore: ds1} or {pool: default}"})
          .field("perZone", &T::per_zone,
                 {.description = "Targets that differ per zone; target applies elsewhere",
                  .map_keys = {"datacenter", "cluster"}});
  return f;
}

const Fields<Subnet>& Subnet::describe() {
  using T = Subnet;
  static const Fields<T> f =
      Fields<T>("Addressing shared by a network's static interfaces")
          .field("gateway", &T::gateway, {.description = "Default gateway"})
          .field("nameservers", &T::nameservers, {.description = "DNS servers"})
          .field("domain", &T::domain, {.description = "DNS search domain"});
  return f;
}

const Fields<ZoneSubnet>& ZoneSubnet::describe() {
  using T = ZoneSubnet;
  static const Fields<T> f =
      Fields<T>("The subnet of a network in one (datacenter, cluster) zone")
          .field("datacenter", &T::datacenter,
                 {.description = "Datacenter of the zone", .required = true})
          .field("cluster", &T::cluster, {.description = "Cluster of the zone", .required = true})
          .field("subnet", &T::subnet,
                 {.description = "Addressing in that zone", .required = true});
  return f;
}

const Fields<NetworkClassCapability>& NetworkClassCapability::describe() {
  using T = NetworkClassCapability;
  static const Fields<T> f =
      Fields<T>("A network class and its backend target (e.g. portGroup, network, bridge)")
          .field("name", &T::name,
                 {.description = "Network class name that VMClass interfaces use",
                  .required = true,
                  .min_length = 1})
          .field("target", &T::target,
                 {.description = "Backend target, e.g. {portGroup: vm-net} or {bridge: br0}"})
          .field("perZone", &T::per_zone,
                 {.description = "Targets that differ per zone; target applies elsewhere",
                  .map_keys = {"datacenter", "cluster"}})
          .field("subnet", &T::subnet,
                 {.description = "Gateway and DNS for static addresses on this network"})
          .field("perZoneSubnet", &T::per_zone_subnet,
                 {.description = "Subnets that differ per zone; subnet applies elsewhere",
                  .map_keys = {"datacenter", "cluster"}});
  return f;
}

const Fields<ProviderCapabilities>& ProviderCapabilities::describe() {
  using T = ProviderCapabilities;
  static const Fields<T> f =
      Fields<T>("What this Provider offers; the scheduler only considers what is listed")
          .field("storageClasses", &T::storage_classes,
                 {.description = "Storage classes and where each lands on the backend",
                  .map_keys = {"name"}})
          .field("networkClasses", &T::network_classes,
                 {.description = "Network classes and where each lands on the backend",
                  .map_keys = {"name"}})
          .field("features", &T::features,
                 {.description = "Features offered, e.g. vtpm, efiSecureBoot, hotAddCPU",
                  .set = true});
  return f;
}

const Fields<FailureDomainNameOverride>& FailureDomainNameOverride::describe() {
  using T = FailureDomainNameOverride;
  static const Fields<T> f =
      Fields<T>("A chosen name for the failure domain of one (datacenter, cluster)")
          .field("datacenter", &T::datacenter,
                 {.description = "Datacenter of the zone", .required = true})
          .field("cluster", &T::cluster, {.description = "Cluster of the zone", .required = true})
          .field("name", &T::name,
                 {.description = "Failure-domain name to report instead of the derived one",
                  .required = true,
                  .min_length = 1});
  return f;
}

const Fields<Attestation>& Attestation::describe() {
  using T = Attestation;
  static const Fields<T> f =
      Fields<T>("Settings for an external attestation broker; banlieue never verifies with it")
          .field("ekTrustBundle", &T::ek_trust_bundle,
                 {.description = "CA certificates that vouch for the vTPM endorsement keys",
                  .required = true});
  return f;
}

const Fields<ProviderSpec>& ProviderSpec::describe() {
  using T = ProviderSpec;
  static const Fields<T> f =
      Fields<T>("One backend instance: a vCenter, a libvirt host, a Proxmox VE cluster")
          .field("providerClassRef", &T::provider_class_ref,
                 {.description = "The ProviderClass that runs this backend", .required = true})
          .field("connection", &T::connection,
                 {.description = "Endpoint, credentials and TLS of the backend", .required = true})
          .field("capabilities", &T::capabilities,
                 {.description = "Storage, network classes and features this backend offers"})
          .field("paused", &T::paused,
                 {.description = "Stop reconciling this Provider and its machines"})
          .field("useContentLibrary", &T::use_content_library,
                 {.description = "vSphere: import images through a content library (not "
                                 "implemented; refused)"})
          .field("failureDomainNameOverrides", &T::failure_domain_name_overrides,
                 {.description = "Names for failure domains instead of the derived ones",
                  .map_keys = {"datacenter", "cluster"}})
          .field("attestation", &T::attestation,
                 {.description = "vTPM attestation settings passed on to a broker"})
          .field("machineKind", &T::machine_kind,
                 {.description = "The infrastructure kind this Provider's VMs become, one of "
                                 "its class's status.machineKinds (a plugin may serve several); "
                                 "unset: the class's status.machineKind",
                  .pattern = "^[A-Z][A-Za-z0-9]*$"})
          .field("maxConcurrentCreates", &T::max_concurrent_creates,
                 {.description = "Backend machine creates this Provider runs at once (a clone "
                                 "on vSphere, a volume and domain on libvirt, a clone under "
                                 "Proxmox VE's storage lock); more wait in line with "
                                 "Ready=False reason WaitingForCreateSlot. Unset: 16",
                  .minimum = 1,
                  .maximum = 1000});
  return f;
}

const Fields<FailureDomainAttributes>& FailureDomainAttributes::describe() {
  using T = FailureDomainAttributes;
  static const Fields<T> f =
      Fields<T>("What the failure domain can do, as verified on the backend")
          .field("availableStorageClasses", &T::available_storage_classes,
                 {.description = "Storage classes whose target exists there"})
          .field("availableNetworkClasses", &T::available_network_classes,
                 {.description = "Network classes whose target exists there"})
          .field("features", &T::features, {.description = "Features offered there"})
          .field("raw", &T::raw,
                 {.description = "Backend facts, e.g. datacenter, cluster, host, node"})
          .field("importTargets", &T::import_targets,
                 {.description = "Targets a built image is imported into one by one there "
                                 "(libvirt: the pools of the storage classes), each with its "
                                 "own import Job and VMImage zone row; unset: one import for "
                                 "the whole failure domain"});
  return f;
}

const Fields<ProviderFailureDomain>& ProviderFailureDomain::describe() {
  using T = ProviderFailureDomain;
  static const Fields<T> f =
      Fields<T>("A verified failure domain")
          .field("name", &T::name,
                 {.description = "Failure-domain name, unique in the Provider", .required = true})
          .field("labels", &T::labels,
                 {.description = "Labels that failureDomainSelector and antiAffinity match"})
          .field("attributes", &T::attributes,
                 {.description = "Classes and features available there"});
  return f;
}

const Fields<ProviderWorkload>& ProviderWorkload::describe() {
  using T = ProviderWorkload;
  static const Fields<T> f =
      Fields<T>("The provider workload, written only by banlieue.io/operator")
          .field("mode", &T::mode,
                 {.description = "The ProviderClass's deployment mode",
                  .enum_values = {"Managed", "External"},
                  .default_json = "\"Managed\""})
          .field("deploymentName", &T::deployment_name,
                 {.description = "Deployment running the provider (Managed)"})
          .field("namespace", &T::namespace_, {.description = "Namespace of that Deployment"})
          .field("readyReplicas", &T::ready_replicas,
                 {.description = "Ready pods of that Deployment"})
          .field("observedGeneration", &T::observed_generation,
                 {.description = "Generation of that Deployment the counts are from"});
  return f;
}

const Fields<ProviderStatus>& ProviderStatus::describe() {
  using T = ProviderStatus;
  static const Fields<T> f =
      Fields<T>("The backend as the provider and the operator see it")
          .field("failureDomains", &T::failure_domains,
                 {.description = "Failure domains found on the backend, written by the provider",
                  .map_keys = {"name"}})
          .field("conditions", &T::conditions,
                 conditionsSpec("Ready, Connected and the other observations of the Provider"))
          .field("workload", &T::workload, {.description = "The provider's pods"})
          .field("ekCaCertificates", &T::ek_ca_certificates,
                 {.description = "PEM CA certificates of the backend's vTPM endorsement keys"})
          .field("observedGeneration", &T::observed_generation,
                 {.description = "metadata.generation this status was computed from"});
  return f;
}

const Fields<PluginRef>& PluginRef::describe() {
  using T = PluginRef;
  static const Fields<T> f =
      Fields<T>("The backend plugin inside the provider image")
          .field("path", &T::path,
                 {.description = "Plugin directory (holding provider.json) or its .so; must "
                                 "resolve inside the runtime's plugin directory",
                  .required = true,
                  .min_length = 1})
          .field("sha256", &T::sha256,
                 {.description = "Lowercase hex SHA-256 of the plugin's library; when set, the "
                                 "provider refuses to load any other (before running its code)",
                  .pattern = "^[0-9a-f]{64}$"});
  return f;
}

const Fields<ImagePullSecret>& ImagePullSecret::describe() {
  using T = ImagePullSecret;
  static const Fields<T> f =
      Fields<T>("A Secret for pulling the provider image")
          .field("name", &T::name,
                 {.description = "Name of a docker-registry Secret in the workload's namespace",
                  .required = true,
                  .min_length = 1});
  return f;
}

const Fields<ContainerImage>& ContainerImage::describe() {
  using T = ContainerImage;
  static const Fields<T> f =
      Fields<T>("repository:tag, repository@digest, or repository:tag@digest")
          .field("repository", &T::repository,
                 {.description = "Image repository, e.g. ghcr.io/acme/banlieue",
                  .required = true,
                  .min_length = 1})
          .field("tag", &T::tag, {.description = "Image tag"})
          .field("digest", &T::digest,
                 {.description = "Image digest; pins the content when set",
                  .pattern = "^sha256:[0-9a-f]{64}$"})
          .field("pullPolicy", &T::pull_policy,
                 {.description = "The pod's imagePullPolicy; Kubernetes' default when empty",
                  .enum_values = {"Always", "IfNotPresent", "Never"}})
          .field("pullSecrets", &T::pull_secrets,
                 {.description = "Secrets for a private registry", .map_keys = {"name"}});
  return f;
}

const Fields<LoggingSpec>& LoggingSpec::describe() {
  using T = LoggingSpec;
  static const Fields<T> f =
      Fields<T>("Log settings of the provider pods")
          .field("level", &T::level,
                 {.description = "Lowest level logged",
                  .enum_values = {"trace", "debug", "info", "warn", "error", "critical", "off"}})
          .field("format", &T::format,
                 {.description = "Plain text or one JSON object per line",
                  .enum_values = {"text", "json"}});
  return f;
}

const Fields<ProviderClassSpec>& ProviderClassSpec::describe() {
  using T = ProviderClassSpec;
  static const Fields<T> f =
      Fields<T>("How Providers of one backend run")
          .field("backend", &T::backend,
                 {.description = "Runs as `banlieue provider <backend>`",
                  .required = true,
                  .pattern = "^[a-z0-9]([-a-z0-9]{0,61}[a-z0-9])?$"})
          .field(
              "plugin", &T::plugin,
              {.description = "Which plugin the provider loads; the class is not Ready without it"})
          .field("image", &T::image, {.description = "Required when Managed; absent when External"})
          .field("deployment", &T::deployment,
                 {.description = "Managed: the operator runs a Deployment; External: identity "
                                 "and RBAC only",
                  .enum_values = {"Managed", "External"},
                  .default_json = "\"Managed\""})
          .field("workloadNamespace", &T::workload_namespace,
                 {.description = "Where workloads run; unset: each Provider's namespace"})
          .field("replicas", &T::replicas,
                 {.description = "Provider pods per Provider; one leads, the others stand by",
                  .minimum = 1,
                  .default_json = "1"})
          .field("resources", &T::resources,
                 {.description = "CPU and memory of the provider container"})
          .field("nodeSelector", &T::node_selector,
                 {.description = "Node labels the provider pods require"})
          .field("tolerations", &T::tolerations,
                 {.description = "Taints the provider pods tolerate"})
          .field("logging", &T::logging, {.description = "Log level and format"})
          .field("additionalRules", &T::additional_rules,
                 {.description = "Appended to each Provider's Role; the operator must hold them"})
          .field("paused", &T::paused,
                 {.description = "Stop reconciling this class and its workloads"});
  return f;
}

const Fields<InfrastructureKind>& InfrastructureKind::describe() {
  using T = InfrastructureKind;
  static const Fields<T> f =
      Fields<T>("The infrastructure kind the class's plugin serves for machines")
          .field("apiVersion", &T::api_version,
                 {.description = "Group/version, e.g. infrastructure.banlieue.io/v1beta2",
                  .required = true})
          .field("kind", &T::kind, {.description = "Kind, e.g. LibvirtMachine", .required = true});
  return f;
}

const Fields<PublishedPlugin>& PublishedPlugin::describe() {
  using T = PublishedPlugin;
  static const Fields<T> f =
      Fields<T>("The plugin a provider pod of this class loaded, published by that pod")
          .field("name", &T::name, {.description = "The plugin's name (provider.json)"})
          .field("version", &T::version, {.description = "The plugin's providerVersion"})
          .field("abi", &T::abi, {.description = "ABI version of the plugin's table, e.g. 1.3"})
          .field("sha256", &T::sha256,
                 {.description = "Lowercase hex SHA-256 of the library the pod loaded"})
          .field("infrastructureKinds", &T::infrastructure_kinds,
                 {.description = "Every infrastructure kind the plugin serves"})
          .field("operations", &T::operations,
                 {.description = "Operations the plugin serves besides reconcile and finalize "
                                 "(introspect, importImage, deleteImage, snapshot, console)"})
          .field("features", &T::features, {.description = "Features the plugin declares"})
          .field("observedGeneration", &T::observed_generation,
                 {.description = "The class's metadata.generation the pod loaded it from"})
          .field("machineFinalizer", &T::machine_finalizer,
                 {.description = "The finalizer the pod's provider puts on infrastructure "
                                 "objects before any backend work; the controller creates them "
                                 "carrying it, which saves the provider that write"});
  return f;
}

const Fields<ProviderClassStatus>& ProviderClassStatus::describe() {
  using T = ProviderClassStatus;
  static const Fields<T> f =
      Fields<T>("The class as the operator sees it")
          .field("conditions", &T::conditions,
                 conditionsSpec("Ready and the other observations of the class"))
          .field("machineKind", &T::machine_kind,
                 {.description = "The infrastructure kind VMs on this class's Providers become "
                                 "unless a Provider names another (spec.machineKind): the "
                                 "plugin's first, as its pods publish it (status.plugin) or "
                                 "the operator's copy of provider.json says"})
          .field("machineKinds", &T::machine_kinds,
                 {.description = "Every infrastructure kind the class's plugin serves"})
          .field("plugin", &T::plugin,
                 {.description = "What the class's provider pods loaded, published by them"})
          .field("providers", &T::providers, {.description = "Providers referencing this class"})
          .field("observedGeneration", &T::observed_generation,
                 {.description = "metadata.generation this status was computed from"});
  return f;
}

BANLIEUE_API_CODEC(Provider);
BANLIEUE_API_CODEC(ProviderClass);

std::vector<KindInfo> providerKinds() {
  KindInfo provider{.group = kGroup,
                    .version = kVersion,
                    .kind = "Provider",
                    .plural = "providers",
                    .short_names = {"prov"},
                    .description = "One backend instance and its connection and capabilities",
                    .columns = {{"Class", "string", ".spec.providerClassRef.name"},
                                {"Endpoint", "string", ".spec.connection.endpoint", "", 1},
                                readyColumn(),
                                ageColumn()},
                    .spec_schema = &schemaOf<ProviderSpec>,
                    .status_schema = &schemaOf<ProviderStatus>,
                    .spec_required = true};
  KindInfo provider_class{
      .group = kGroup,
      .version = kVersion,
      .kind = "ProviderClass",
      .plural = "providerclasses",
      .short_names = {"provclass"},
      .namespaced = false,
      .description = "How the Providers of one backend run: plugin, image, workload shape",
      .columns = {{"Backend", "string", ".spec.backend"},
                  {"Image", "string", ".spec.image.tag"},
                  {"Deployment", "string", ".spec.deployment"},
                  {"Providers", "integer", ".status.providers"},
                  readyColumn(),
                  ageColumn()},
      .spec_schema = &schemaOf<ProviderClassSpec>,
      .status_schema = &schemaOf<ProviderClassStatus>,
      .spec_required = true};
  return {provider, provider_class};
}

}  // namespace banlieue::api
