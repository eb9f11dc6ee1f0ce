// Types shared by every banlieue API kind: object metadata, references, selectors,
// conditions, addresses and IPAM. Field names follow the Kubernetes and CAPI v1beta2 shapes
// (docs/adr/0005-api-types-and-crdgen.md).
#pragma once

#include <cstdint>
#include <map>
#include <optional>
#include <string>
#include <vector>

namespace banlieue::api {

template <class T>
class Fields;

using StringMap = std::map<std::string, std::string>;

// Enum values, declared once for the schema and for code that compares them.
namespace enums {
inline const std::vector<std::string> kPowerState = {"PoweredOn", "PoweredOff", "Suspended"};
inline const std::vector<std::string> kFirmware = {"bios", "efi", "efi-secure"};
inline const std::vector<std::string> kDiskProvisioning = {"thin", "thick", "eagerZeroed"};
inline const std::vector<std::string> kSelectorOperator = {"In", "NotIn", "Exists", "DoesNotExist"};
inline const std::vector<std::string> kAddressType = {"Hostname", "ExternalIP", "InternalIP",
                                                      "ExternalDNS", "InternalDNS"};
inline const std::vector<std::string> kConditionStatus = {"True", "False", "Unknown"};
}  // namespace enums

struct OwnerReference {
  std::string api_version;
  std::string kind;
  std::string name;
  std::string uid;
  std::optional<bool> controller;
  std::optional<bool> block_owner_deletion;
  static const Fields<OwnerReference>& describe();
};

// The parts of metav1.ObjectMeta banlieue reads and writes; other members are ignored on read.
struct ObjectMeta {
  std::string name;
  std::string generate_name;
  std::string namespace_;
  std::string uid;
  std::string resource_version;
  int64_t generation = 0;
  std::string creation_timestamp;
  std::string deletion_timestamp;
  StringMap labels;
  StringMap annotations;
  std::vector<std::string> finalizers;
  std::vector<OwnerReference> owner_references;
  static const Fields<ObjectMeta>& describe();
};

// metav1.Condition.
struct Condition {
  std::string type;
  std::string status;
  int64_t observed_generation = 0;
  std::string last_transition_time;
  std::string reason;
  std::string message;
  static const Fields<Condition>& describe();
};

struct LocalObjectReference {
  std::string name;
  static const Fields<LocalObjectReference>& describe();
};

struct TypedObjectReference {
  std::string api_group;
  std::string kind;
  std::string name;
  std::string namespace_;
  static const Fields<TypedObjectReference>& describe();
};

// A key in a named Secret or ConfigMap; the key's default depends on the use, so it is left
// empty here and defaulted by the field that embeds the selector.
struct KeySelector {
  std::string name;
  std::string key;
  static const Fields<KeySelector>& describe();
};

// Exactly one source: the schema's oneOf refuses others at apply (Fields::exactlyOneOf), and
// the consumer checks again for objects stored before it did.
struct CABundleSource {
  std::optional<std::string> inline_;
  std::optional<KeySelector> config_map_ref;
  std::optional<KeySelector> secret_ref;
  static const Fields<CABundleSource>& describe();
};

struct CloudConfigSource {
  std::optional<KeySelector> secret_ref;
  static const Fields<CloudConfigSource>& describe();
};

struct LabelSelectorRequirement {
  std::string key;
  std::string operator_;
  std::vector<std::string> values;
  static const Fields<LabelSelectorRequirement>& describe();
};

struct LabelSelector {
  StringMap match_labels;
  std::vector<LabelSelectorRequirement> match_expressions;
  static const Fields<LabelSelector>& describe();
};

struct MachineAddress {
  std::string type;
  std::string address;
  static const Fields<MachineAddress>& describe();
};

// CAPI v1beta2's replacement for status.ready.
// The last restart a machine's backend performed for a restart request (spec.restartRequestedAt).
struct RestartRecord {
  std::string requested_at;
  std::string performed_at;
  std::string outcome;
  static const Fields<RestartRecord>& describe();
};

struct InitializationStatus {
  std::optional<bool> provisioned;
  static const Fields<InitializationStatus>& describe();
};

struct ApiEndpoint {
  std::string host;
  int32_t port = 0;
  static const Fields<ApiEndpoint>& describe();
};

// CAPI v1beta2's list form of a failure domain.
struct ClusterFailureDomain {
  std::string name;
  std::optional<bool> control_plane;
  StringMap attributes;
  static const Fields<ClusterFailureDomain>& describe();
};

struct StaticIpamConfig {
  std::string address;
  int32_t prefix = 0;
  std::string gateway;
  std::vector<std::string> nameservers;
  std::string domain;
  static const Fields<StaticIpamConfig>& describe();
};

struct IpamPoolRef {
  TypedObjectReference pool_ref;
  static const Fields<IpamPoolRef>& describe();
};

// Mode is inferred: static, else pool, else DHCP. Setting both is refused by the controller.
struct IpamSpec {
  std::optional<StaticIpamConfig> static_;
  std::optional<IpamPoolRef> pool;
  static const Fields<IpamSpec>& describe();
};

struct StaticNetworkShape {
  std::optional<int32_t> prefix;
  std::string gateway;
  std::vector<std::string> nameservers;
  std::string domain;
  static const Fields<StaticNetworkShape>& describe();
};

struct IpamShape {
  std::optional<StaticNetworkShape> static_;
  std::optional<IpamPoolRef> pool;
  static const Fields<IpamShape>& describe();
};

// A resource.Quantity: accepted as an integer or a string ("500m", "1Gi"), kept as text.
struct Quantity {
  std::string value;
};

struct ResourceRequirements {
  std::map<std::string, Quantity> limits;
  std::map<std::string, Quantity> requests;
  static const Fields<ResourceRequirements>& describe();
};

struct Toleration {
  std::string key;
  std::string operator_;
  std::string value;
  std::string effect;
  std::optional<int64_t> toleration_seconds;
  static const Fields<Toleration>& describe();
};

// rbacv1.PolicyRule.
struct PolicyRule {
  std::vector<std::string> api_groups;
  std::vector<std::string> resources;
  std::vector<std::string> resource_names;
  std::vector<std::string> verbs;
  std::vector<std::string> non_resource_urls;
  static const Fields<PolicyRule>& describe();
};

// apiVersion, kind, metadata, spec and status: the shape of every banlieue object.
template <class SpecT, class StatusT>
struct Resource {
  using Spec = SpecT;
  using Status = StatusT;
  std::string api_version;
  std::string kind;
  ObjectMeta metadata;
  SpecT spec;
  StatusT status;
  static const Fields<Resource>& describe();
};

// For kinds without a status subresource.
struct NoStatus {
  static const Fields<NoStatus>& describe();
};

}  // namespace banlieue::api
