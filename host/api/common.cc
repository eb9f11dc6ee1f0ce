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
  static const Fields<T> f =
      Fields<T>("One aspect of the object's state (metav1.Condition)")
          .field("type", &T::type, {.description = "CamelCase condition type", .required = true})
          .field("status", &T::status, {.required = true, .enum_values = enums::kConditionStatus})
          .field("observedGeneration", &T::observed_generation, {.minimum = 0})
          .field("lastTransitionTime", &T::last_transition_time,
                 {.description = "When status last changed", .format = "date-time"})
          .field("reason", &T::reason, {.description = "CamelCase reason for the last transition"})
          .field("message", &T::message, {.description = "Human-readable detail"});
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
          .field("kind", &T::kind, {.required = true, .min_length = 1})
          .field("name", &T::name, {.required = true, .min_length = 1})
          .field("namespace", &T::namespace_,
                 {.description = "Namespace of the referent; empty for the referrer's"});
  return f;
}

const Fields<KeySelector>& KeySelector::describe() {
  using T = KeySelector;
  static const Fields<T> f =
      Fields<T>("A key of a named Secret or ConfigMap in the referrer's namespace")
          .field("name", &T::name, {.required = true, .min_length = 1})
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
                 {.description = "Secret key holding the bundle (default key ca.crt)"});
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
      Fields<T>()
          .field("key", &T::key, {.required = true, .min_length = 1})
          .field("operator", &T::operator_,
                 {.required = true, .enum_values = enums::kSelectorOperator})
          .field("values", &T::values,
                 {.description = "Values for In and NotIn; empty for Exists and DoesNotExist"});
  return f;
}

const Fields<LabelSelector>& LabelSelector::describe() {
  using T = LabelSelector;
  static const Fields<T> f =
      Fields<T>("A label query (metav1.LabelSelector); an empty selector matches everything")
          .field("matchLabels", &T::match_labels)
          .field("matchExpressions", &T::match_expressions);
  return f;
}

const Fields<MachineAddress>& MachineAddress::describe() {
  using T = MachineAddress;
  static const Fields<T> f =
      Fields<T>()
          .field("type", &T::type, {.required = true, .enum_values = enums::kAddressType})
          .field("address", &T::address, {.required = true});
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
      Fields<T>()
          .field("host", &T::host, {.required = true})
          .field("port", &T::port, {.required = true, .minimum = 1, .maximum = 65535});
  return f;
}

const Fields<ClusterFailureDomain>& ClusterFailureDomain::describe() {
  using T = ClusterFailureDomain;
  static const Fields<T> f = Fields<T>()
                                 .field("name", &T::name, {.required = true})
                                 .field("controlPlane", &T::control_plane)
                                 .field("attributes", &T::attributes);
  return f;
}

const Fields<StaticIpamConfig>& StaticIpamConfig::describe() {
  using T = StaticIpamConfig;
  static const Fields<T> f =
      Fields<T>("A static address")
          .field("address", &T::address, {.required = true, .min_length = 1})
          .field("prefix", &T::prefix, {.required = true, .minimum = 0, .maximum = 128})
          .field("gateway", &T::gateway)
          .field("nameservers", &T::nameservers)
          .field("domain", &T::domain, {.description = "DNS domain; also builds the FQDN"});
  return f;
}

const Fields<IpamPoolRef>& IpamPoolRef::describe() {
  using T = IpamPoolRef;
  static const Fields<T> f =
      Fields<T>("An address from an IPAM pool").field("poolRef", &T::pool_ref, {.required = true});
  return f;
}

const Fields<IpamSpec>& IpamSpec::describe() {
  using T = IpamSpec;
  static const Fields<T> f =
      Fields<T>("Addressing: static, else pool, else DHCP when neither is set")
          .field("static", &T::static_)
          .field("pool", &T::pool);
  return f;
}

const Fields<StaticNetworkShape>& StaticNetworkShape::describe() {
  using T = StaticNetworkShape;
  static const Fields<T> f = Fields<T>("Static addressing without a per-VM address")
                                 .field("prefix", &T::prefix, {.minimum = 0, .maximum = 128})
                                 .field("gateway", &T::gateway)
                                 .field("nameservers", &T::nameservers)
                                 .field("domain", &T::domain);
  return f;
}

const Fields<IpamShape>& IpamShape::describe() {
  using T = IpamShape;
  static const Fields<T> f = Fields<T>("Class-level addressing: static shape, else pool, else DHCP")
                                 .field("static", &T::static_)
                                 .field("pool", &T::pool);
  return f;
}

const Fields<ResourceRequirements>& ResourceRequirements::describe() {
  using T = ResourceRequirements;
  static const Fields<T> f = Fields<T>("Container resource requests and limits")
                                 .field("limits", &T::limits)
                                 .field("requests", &T::requests);
  return f;
}

const Fields<Toleration>& Toleration::describe() {
  using T = Toleration;
  static const Fields<T> f =
      Fields<T>()
          .field("key", &T::key)
          .field("operator", &T::operator_, {.enum_values = {"Exists", "Equal"}})
          .field("value", &T::value)
          .field("effect", &T::effect,
                 {.enum_values = {"NoSchedule", "PreferNoSchedule", "NoExecute"}})
          .field("tolerationSeconds", &T::toleration_seconds);
  return f;
}

const Fields<PolicyRule>& PolicyRule::describe() {
  using T = PolicyRule;
  static const Fields<T> f = Fields<T>("An RBAC rule")
                                 .field("apiGroups", &T::api_groups)
                                 .field("resources", &T::resources)
                                 .field("resourceNames", &T::resource_names)
                                 .field("verbs", &T::verbs, {.required = true, .min_items = 1})
                                 .field("nonResourceURLs", &T::non_resource_urls);
  return f;
}

const Fields<NoStatus>& NoStatus::describe() {
  static const Fields<NoStatus> f;
  return f;
}

}  // namespace banlieue::api
