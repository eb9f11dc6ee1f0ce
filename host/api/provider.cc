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
          .field("caBundle", &T::ca_bundle)
          .field("allowTestDriver", &T::allow_test_driver,
                 {.description = "Accept a backend driver that only simulates VMs, such as "
                                 "libvirt's test:// (testing only; refused otherwise)"});
  return f;
}

const Fields<ZoneTarget>& ZoneTarget::describe() {
  using T = ZoneTarget;
  static const Fields<T> f = Fields<T>("A target for one (datacenter, cluster) zone")
                                 .field("datacenter", &T::datacenter, {.required = true})
                                 .field("cluster", &T::cluster, {.required = true})
                                 .field("target", &T::target);
  return f;
}

const Fields<StorageClassCapability>& StorageClassCapability::describe() {
  using T = StorageClassCapability;
  static const Fields<T> f =
      Fields<T>("A storage class and its backend target (e.g. datastore, pool, storage)")
          .field("name", &T::name, {.required = true, .min_length = 1})
          .field("target", &T::target)
          .field("perZone", &T::per_zone, {.map_keys = {"datacenter", "cluster"}});
  return f;
}

const Fields<Subnet>& Subnet::describe() {
  using T = Subnet;
  static const Fields<T> f = Fields<T>()
                                 .field("gateway", &T::gateway)
                                 .field("nameservers", &T::nameservers)
                                 .field("domain", &T::domain);
  return f;
}

const Fields<ZoneSubnet>& ZoneSubnet::describe() {
  using T = ZoneSubnet;
  static const Fields<T> f = Fields<T>()
                                 .field("datacenter", &T::datacenter, {.required = true})
                                 .field("cluster", &T::cluster, {.required = true})
                                 .field("subnet", &T::subnet, {.required = true});
  return f;
}

const Fields<NetworkClassCapability>& NetworkClassCapability::describe() {
  using T = NetworkClassCapability;
  static const Fields<T> f =
      Fields<T>("A network class and its backend target (e.g. portGroup, network, bridge)")
          .field("name", &T::name, {.required = true, .min_length = 1})
          .field("target", &T::target)
          .field("perZone", &T::per_zone, {.map_keys = {"datacenter", "cluster"}})
          .field("subnet", &T::subnet)
          .field("perZoneSubnet", &T::per_zone_subnet, {.map_keys = {"datacenter", "cluster"}});
  return f;
}

const Fields<ProviderCapabilities>& ProviderCapabilities::describe() {
  using T = ProviderCapabilities;
  static const Fields<T> f =
      Fields<T>("What this Provider offers; the scheduler only considers what is listed")
          .field("storageClasses", &T::storage_classes, {.map_keys = {"name"}})
          .field("networkClasses", &T::network_classes, {.map_keys = {"name"}})
          .field("features", &T::features, {.set = true});
  return f;
}

const Fields<FailureDomainNameOverride>& FailureDomainNameOverride::describe() {
  using T = FailureDomainNameOverride;
  static const Fields<T> f = Fields<T>()
                                 .field("datacenter", &T::datacenter, {.required = true})
                                 .field("cluster", &T::cluster, {.required = true})
                                 .field("name", &T::name, {.required = true, .min_length = 1});
  return f;
}

const Fields<Attestation>& Attestation::describe() {
  using T = Attestation;
  static const Fields<T> f =
      Fields<T>("Settings for an external attestation broker; banlieue never verifies with it")
          .field("ekTrustBundle", &T::ek_trust_bundle, {.required = true});
  return f;
}

const Fields<ProviderSpec>& ProviderSpec::describe() {
  using T = ProviderSpec;
  static const Fields<T> f =
      Fields<T>("One backend instance: a vCenter, a libvirt host, a Proxmox VE cluster")
          .field("providerClassRef", &T::provider_class_ref,
                 {.description = "The ProviderClass that runs this backend", .required = true})
          .field("connection", &T::connection, {.required = true})
          .field("capabilities", &T::capabilities)
          .field("paused", &T::paused)
          .field("useContentLibrary", &T::use_content_library)
          .field("failureDomainNameOverrides", &T::failure_domain_name_overrides,
                 {.map_keys = {"datacenter", "cluster"}})
          .field("attestation", &T::attestation);
  return f;
}

const Fields<FailureDomainAttributes>& FailureDomainAttributes::describe() {
  using T = FailureDomainAttributes;
  static const Fields<T> f = Fields<T>()
                                 .field("availableStorageClasses", &T::available_storage_classes)
                                 .field("availableNetworkClasses", &T::available_network_classes)
                                 .field("features", &T::features)
                                 .field("raw", &T::raw);
  return f;
}

const Fields<ProviderFailureDomain>& ProviderFailureDomain::describe() {
  using T = ProviderFailureDomain;
  static const Fields<T> f = Fields<T>("A verified failure domain")
                                 .field("name", &T::name, {.required = true})
                                 .field("labels", &T::labels)
                                 .field("attributes", &T::attributes);
  return f;
}

const Fields<ProviderWorkload>& ProviderWorkload::describe() {
  using T = ProviderWorkload;
  static const Fields<T> f =
      Fields<T>("The provider workload, written only by banlieue.io/operator")
          .field("mode", &T::mode,
                 {.enum_values = {"Managed", "External"}, .default_json = "\"Managed\""})
          .field("deploymentName", &T::deployment_name)
          .field("namespace", &T::namespace_)
          .field("readyReplicas", &T::ready_replicas)
          .field("observedGeneration", &T::observed_generation);
  return f;
}

const Fields<ProviderStatus>& ProviderStatus::describe() {
  using T = ProviderStatus;
  static const Fields<T> f =
      Fields<T>()
          .field("failureDomains", &T::failure_domains, {.map_keys = {"name"}})
          .field("conditions", &T::conditions, conditionsSpec())
          .field("workload", &T::workload)
          .field("ekCaCertificates", &T::ek_ca_certificates)
          .field("observedGeneration", &T::observed_generation);
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
      Fields<T>().field("name", &T::name, {.required = true, .min_length = 1});
  return f;
}

const Fields<ContainerImage>& ContainerImage::describe() {
  using T = ContainerImage;
  static const Fields<T> f =
      Fields<T>("repository:tag, repository@digest, or repository:tag@digest")
          .field("repository", &T::repository, {.required = true, .min_length = 1})
          .field("tag", &T::tag)
          .field("digest", &T::digest, {.pattern = "^sha256:[0-9a-f]{64}$"})
          .field("pullPolicy", &T::pull_policy,
                 {.enum_values = {"Always", "IfNotPresent", "Never"}})
          .field("pullSecrets", &T::pull_secrets, {.map_keys = {"name"}});
  return f;
}

const Fields<LoggingSpec>& LoggingSpec::describe() {
  using T = LoggingSpec;
  static const Fields<T> f =
      Fields<T>()
          .field("level", &T::level,
                 {.enum_values = {"trace", "debug", "info", "warn", "error", "critical", "off"}})
          .field("format", &T::format, {.enum_values = {"text", "json"}});
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
          .field("plugin", &T::plugin)
          .field("image", &T::image, {.description = "Required when Managed; absent when External"})
          .field("deployment", &T::deployment,
                 {.description = "Managed: the operator runs a Deployment; External: identity "
                                 "and RBAC only",
                  .enum_values = {"Managed", "External"},
                  .default_json = "\"Managed\""})
          .field("workloadNamespace", &T::workload_namespace,
                 {.description = "Where workloads run; unset: each Provider's namespace"})
          .field("replicas", &T::replicas, {.minimum = 1, .default_json = "1"})
          .field("resources", &T::resources)
          .field("nodeSelector", &T::node_selector)
          .field("tolerations", &T::tolerations)
          .field("logging", &T::logging)
          .field("additionalRules", &T::additional_rules,
                 {.description = "Appended to each Provider's Role; the operator must hold them"})
          .field("paused", &T::paused);
  return f;
}

const Fields<InfrastructureKind>& InfrastructureKind::describe() {
  using T = InfrastructureKind;
  static const Fields<T> f =
      Fields<T>("The infrastructure kind the class's plugin serves for machines")
          .field("apiVersion", &T::api_version, {.required = true})
          .field("kind", &T::kind, {.required = true});
  return f;
}

const Fields<ProviderClassStatus>& ProviderClassStatus::describe() {
  using T = ProviderClassStatus;
  static const Fields<T> f =
      Fields<T>()
          .field("conditions", &T::conditions, conditionsSpec())
          .field("machineKind", &T::machine_kind,
                 {.description = "Infrastructure kind of the class's plugin, published by the "
                                 "operator from provider.json"})
          .field("providers", &T::providers, {.description = "Providers referencing this class"})
          .field("observedGeneration", &T::observed_generation);
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
