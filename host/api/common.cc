#include "host/api/declare.h"

namespace banlieue::api {

const Fields<OwnerReference>& OwnerReference::describe() {
  using T = OwnerReference;
  static const Fields<T> f = Fields<T>()
                                 .field("apiVersion", &T::api_version, {.required = true})
                                 .field("kind", &T::kind, {.required = true})
                                 .field("name", &T::name, {.required = true})
                                 .field("uid", &T::uid, {.required = true})
                                 .field("controller", &T::controller)
                                 .field("blockOwnerDeletion", &T::block_owner_deletion);
  return f;
}

const Fields<ObjectMeta>& ObjectMeta::describe() {
  using T = ObjectMeta;
  static const Fields<T> f = Fields<T>()
                                 .field("name", &T::name)
                                 .field("generateName", &T::generate_name)
                                 .field("namespace", &T::namespace_)
                                 .field("uid", &T::uid)
                                 .field("resourceVersion", &T::resource_version)
                                 .field("generation", &T::generation)
                                 .field("creationTimestamp", &T::creation_timestamp)
                                 .field("deletionTimestamp", &T::deletion_timestamp)
                                 .field("labels", &T::labels)
                                 .field("annotations", &T::annotations)
                                 .field("finalizers", &T::finalizers)
                                 .field("ownerReferences", &T::owner_references);
  return f;
}

const Fields<Condition>& Condition::describe() {
  using T = Condition;
  // The constraints of metav1.Condition, so a writer that would be refused by a built-in kind
  // is refused here too.
  static const Fields<T> f =
      Fields<T>("One aspect of the object's state (metav1.Condition)")
          .field("type", &T::type,
                 {.description = "CamelCase condition type, e.g. Ready",
                  .required = true,
                  .max_length = 316,
                  .pattern = "^([a-z0-9]([-a-z0-9]*[a-z0-9])?(\\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*/)?"
                             "(([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9])$"})
          .field("status", &T::status,
                 {.description = "True, False or Unknown",
                  .required = true,
                  .enum_values = enums::kConditionStatus})
          .field(
              "observedGeneration", &T::observed_generation,
              {.description = "metadata.generation the condition was computed from", .minimum = 0})
          .field("lastTransitionTime", &T::last_transition_time,
                 {.description = "When status last changed",
                  .required = true,
                  .format = "date-time",
                  .lenient_decode = true})
          .field(
              "reason", &T::reason,
              {.description = "CamelCase reason for the last transition, for machines and kubectl",
               .required = true,
               .min_length = 1,
               .max_length = 1024,
               .pattern = "^[A-Za-z]([A-Za-z0-9_,:]*[A-Za-z0-9_])?$",
               .lenient_decode = true})
          .field("message", &T::message,
                 {.description = "Human-readable detail; may be empty",
                  .required = true,
                  .max_length = 32768,
                  .lenient_decode = true});
  return f;
}

const Fields<LocalObjectReference>& LocalObjectReference::describe() {
  using T = LocalObjectReference;
  static const Fields<T> f =
      Fields<T>("A reference by name")
          .field("name", &T::name,
                 {.description = "Name of the referent", .required = true, .min_length = 1});
  return f;
}

const Fields<TypedObjectReference>& TypedObjectReference::describe() {
  using T = TypedObjectReference;
  static const Fields<T> f =
      Fields<T>("A reference to an object of any kind")
          .field("apiGroup", &T::api_group, {.description = "API group of the referent"})
          .field("kind", &T::kind,
                 {.description = "Kind of the referent", .required = true, .min_length = 1})
          .field("name", &T::name,
                 {.description = "Name of the referent", .required = true, .min_length = 1})
          .field("namespace", &T::namespace_,
                 {.description = "Namespace of the referent; empty for the referrer's"});
  return f;
}

const Fields<KeySelector>& KeySelector::describe() {
  using T = KeySelector;
  static const Fields<T> f =
      Fields<T>("A key of a named Secret or ConfigMap in the referrer's namespace")
          .field(
              "name", &T::name,
              {.description = "Name of the Secret or ConfigMap", .required = true, .min_length = 1})
          .field("key", &T::key, {.description = "Key in the object's data"});
  return f;
}

const Fields<CABundleSource>& CABundleSource::describe() {
  using T = CABundleSource;
  static const Fields<T> f =
      Fields<T>("A PEM CA bundle; exactly one of inline, configMapRef, secretRef")
          .field("inline", &T::inline_, {.description = "PEM text"})
          .field("configMapRef", &T::config_map_ref,
                 {.description = "ConfigMap key holding the bundle (default key ca.crt)"})
          .field("secretRef", &T::secret_ref,
                 {.description = "Secret key holding the bundle (default key ca.crt)"})
          .exactlyOneOf({"inline", "configMapRef", "secretRef"});
  return f;
}

const Fields<CloudConfigSource>& CloudConfigSource::describe() {
  using T = CloudConfigSource;
  static const Fields<T> f =
      Fields<T>("A cloud-config document")
          .field(
              "secretRef", &T::secret_ref,
              {.description = "Secret key holding the document (default key cloud-config.yaml)"});
  return f;
}

const Fields<LabelSelectorRequirement>& LabelSelectorRequirement::describe() {
  using T = LabelSelectorRequirement;
  static const Fields<T> f =
      Fields<T>("One requirement on a label")
          .field("key", &T::key,
                 {.description = "Label key the requirement is about",
                  .required = true,
                  .min_length = 1})
          .field("operator", &T::operator_,
                 {.description = "How the label's value relates to values",
                  .required = true,
                  .enum_values = enums::kSelectorOperator})
          .field("values", &T::values,
                 {.description = "Values for In and NotIn; empty for Exists and DoesNotExist"});
  return f;
}

const Fields<LabelSelector>& LabelSelector::describe() {
  using T = LabelSelector;
  static const Fields<T> f =
      Fields<T>("A label query (metav1.LabelSelector); an empty selector matches everything")
          .field("matchLabels", &T::match_labels,
                 {.description = "Labels that must all be present with these values"})
          .field("matchExpressions", &T::match_expressions,
                 {.description = "Requirements that must all hold"});
  return f;
}

const Fields<MachineAddress>& MachineAddress::describe() {
  using T = MachineAddress;
  static const Fields<T> f =
      Fields<T>("An address of the machine, as CAPI reports them")
          .field("type", &T::type,
                 {.description = "What kind of address this is",
                  .required = true,
                  .enum_values = enums::kAddressType})
          .field("address", &T::address,
                 {.description = "The address or host name", .required = true});
  return f;
}

const Fields<RestartRecord>& RestartRecord::describe() {
  using T = RestartRecord;
  static const Fields<T> f =
      Fields<T>("The last restart request the backend acted on")
          .field("requestedAt", &T::requested_at,
                 {.description = "The spec.restartRequestedAt value this record answers",
                  .required = true})
          .field("performedAt", &T::performed_at,
                 {.description = "When the backend began the restart", .format = "date-time"})
          .field("outcome", &T::outcome,
                 {.description = "Restarted: the guest was shut down and started again. "
                                 "NotRunning: the machine was not running, nothing was done",
                  .enum_values = {"Restarted", "NotRunning"}});
  return f;
}

const Fields<InitializationStatus>& InitializationStatus::describe() {
  using T = InitializationStatus;
  static const Fields<T> f =
      Fields<T>("CAPI v1beta2 initialization")
          .field("provisioned", &T::provisioned,
                 {.description = "True once the infrastructure is provisioned"});
  return f;
}

const Fields<ApiEndpoint>& ApiEndpoint::describe() {
  using T = ApiEndpoint;
  static const Fields<T> f =
      Fields<T>("Where a cluster's API server is reached")
          .field("host", &T::host,
                 {.description = "Host name or address of the API server", .required = true})
          .field("port", &T::port,
                 {.description = "TCP port of the API server",
                  .required = true,
                  .minimum = 1,
                  .maximum = 65535});
  return f;
}

const Fields<ClusterFailureDomain>& ClusterFailureDomain::describe() {
  using T = ClusterFailureDomain;
  static const Fields<T> f =
      Fields<T>("A failure domain as CAPI lists it")
          .field("name", &T::name, {.description = "Failure-domain name", .required = true})
          .field("controlPlane", &T::control_plane,
                 {.description = "Whether control-plane machines may be placed there"})
          .field("attributes", &T::attributes,
                 {.description = "Free-form facts about the failure domain"});
  return f;
}

const Fields<StaticIpamConfig>& StaticIpamConfig::describe() {
  using T = StaticIpamConfig;
  static const Fields<T> f =
      Fields<T>("A static address")
          .field("address", &T::address,
                 {.description = "IPv4 or IPv6 address, without prefix",
                  .required = true,
                  .min_length = 1})
          .field("prefix", &T::prefix,
                 {.description = "Network prefix length",
                  .required = true,
                  .minimum = 0,
                  .maximum = 128})
          .field("gateway", &T::gateway, {.description = "Default gateway"})
          .field("nameservers", &T::nameservers, {.description = "DNS servers"})
          .field("domain", &T::domain, {.description = "DNS domain; also builds the FQDN"});
  return f;
}

const Fields<IpamPoolRef>& IpamPoolRef::describe() {
  using T = IpamPoolRef;
  static const Fields<T> f =
      Fields<T>("An address from an IPAM pool")
          .field(
              "poolRef", &T::pool_ref,
              {.description = "The IPAM pool object to claim the address from", .required = true});
  return f;
}

const Fields<IpamSpec>& IpamSpec::describe() {
  using T = IpamSpec;
  static const Fields<T> f =
      Fields<T>("Addressing: static, else pool, else DHCP when neither is set")
          .field("static", &T::static_, {.description = "A fixed address"})
          .field("pool", &T::pool, {.description = "An address claimed from an IPAM pool"});
  return f;
}

const Fields<StaticNetworkShape>& StaticNetworkShape::describe() {
  using T = StaticNetworkShape;
  static const Fields<T> f =
      Fields<T>("Static addressing without a per-VM address")
          .field("prefix", &T::prefix,
                 {.description = "Network prefix length", .minimum = 0, .maximum = 128})
          .field("gateway", &T::gateway, {.description = "Default gateway"})
          .field("nameservers", &T::nameservers, {.description = "DNS servers"})
          .field("domain", &T::domain, {.description = "DNS domain; also builds the FQDN"});
  return f;
}

const Fields<IpamShape>& IpamShape::describe() {
  using T = IpamShape;
  static const Fields<T> f =
      Fields<T>("Class-level addressing: static shape, else pool, else DHCP")
          .field("static", &T::static_,
                 {.description = "Static addressing; each VM names its address in "
                                 "networkOverrides"})
          .field("pool", &T::pool, {.description = "Addresses claimed from an IPAM pool"});
  return f;
}

const Fields<ResourceRequirements>& ResourceRequirements::describe() {
  using T = ResourceRequirements;
  static const Fields<T> f =
      Fields<T>("Container resource requests and limits")
          .field("limits", &T::limits,
                 {.description = "Most the container may use, e.g. {memory: 256Mi}"})
          .field("requests", &T::requests,
                 {.description = "What the scheduler reserves, e.g. {cpu: 100m}"});
  return f;
}

const Fields<Toleration>& Toleration::describe() {
  using T = Toleration;
  static const Fields<T> f =
      Fields<T>("A taint the pod tolerates (corev1.Toleration)")
          .field("key", &T::key, {.description = "Taint key; empty with Exists matches all"})
          .field("operator", &T::operator_,
                 {.description = "Equal compares value; Exists ignores it",
                  .enum_values = {"Exists", "Equal"}})
          .field("value", &T::value, {.description = "Taint value for Equal"})
          .field("effect", &T::effect,
                 {.description = "Taint effect to match; empty matches all",
                  .enum_values = {"NoSchedule", "PreferNoSchedule", "NoExecute"}})
          .field("tolerationSeconds", &T::toleration_seconds,
                 {.description = "For NoExecute: how long the pod stays after the taint "
                                 "appears"});
  return f;
}

const Fields<PolicyRule>& PolicyRule::describe() {
  using T = PolicyRule;
  static const Fields<T> f =
      Fields<T>("An RBAC rule")
          .field("apiGroups", &T::api_groups, {.description = "API groups; \"\" is the core"})
          .field("resources", &T::resources, {.description = "Resources, e.g. secrets"})
          .field("resourceNames", &T::resource_names,
                 {.description = "Object names; all when empty"})
          .field("verbs", &T::verbs,
                 {.description = "Verbs allowed, e.g. get, list, watch",
                  .required = true,
                  .min_items = 1})
          .field("nonResourceURLs", &T::non_resource_urls,
                 {.description = "URL paths such as /healthz (ClusterRoles only)"});
  return f;
}

const Fields<NoStatus>& NoStatus::describe() {
  static const Fields<NoStatus> f;
  return f;
}

}  // namespace banlieue::api
