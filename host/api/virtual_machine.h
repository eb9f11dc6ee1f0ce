// banlieue.io/v1alpha1 VirtualMachine, and the pool kinds built on its spec
// (VirtualMachinePool, VirtualMachineClaim).
#pragma once

#include "host/api/common.h"

namespace banlieue::api {

struct AntiAffinityTerm {
  std::string topology_key;
  LabelSelector label_selector;
  std::string mode = "required";
  static const Fields<AntiAffinityTerm>& describe();
};

struct Placement {
  std::optional<LabelSelector> provider_selector;
  std::optional<LabelSelector> failure_domain_selector;
  std::vector<AntiAffinityTerm> anti_affinity;
  static const Fields<Placement>& describe();
};

struct UserDataSource {
  std::optional<KeySelector> secret_ref;
  std::optional<KeySelector> config_map_ref;
  static const Fields<UserDataSource>& describe();
};

struct NetworkOverride {
  std::string name;
  StaticIpamConfig static_;
  static const Fields<NetworkOverride>& describe();
};

struct DiskOverride {
  std::string name;
  int32_t size_gib = 0;
  static const Fields<DiskOverride>& describe();
};

struct HardwareOverride {
  std::optional<int32_t> cpus;
  std::optional<int32_t> memory_mib;
  std::vector<DiskOverride> disk_overrides;
  static const Fields<HardwareOverride>& describe();
};

struct VirtualMachineSpec {
  LocalObjectReference class_ref;
  LocalObjectReference image_ref;
  Placement placement;
  std::string desired_power_state = "PoweredOn";
  std::string restart_requested_at;
  std::string resize_policy = "Restart";
  std::optional<UserDataSource> user_data;
  std::string migration_policy = "automatic";
  bool paused = false;
  std::vector<NetworkOverride> network_overrides;
  std::optional<HardwareOverride> hardware_override;
  std::string folder;
  static const Fields<VirtualMachineSpec>& describe();
};

struct ResolvedMapping {
  std::string class_name;
  std::string backend_id;
  static const Fields<ResolvedMapping>& describe();
};

struct ScheduledPlacement {
  std::string provider_name;
  std::string provider_class;
  std::string failure_domain;
  std::vector<ResolvedMapping> resolved_storage;
  std::vector<ResolvedMapping> resolved_networks;
  std::string scheduled_at;
  static const Fields<ScheduledPlacement>& describe();
};

struct HeldAddress {
  std::string interface;
  std::string network_class;
  std::string address;
  static const Fields<HeldAddress>& describe();
};

struct VirtualMachineStatus {
  std::optional<ScheduledPlacement> scheduled;
  std::optional<TypedObjectReference> infrastructure_ref;
  std::optional<InitializationStatus> initialization;
  std::vector<MachineAddress> addresses;
  std::string observed_power_state;
  std::optional<RestartRecord> last_restart;
  std::vector<std::string> tpm_endorsement_certificates;
  std::vector<HeldAddress> held_addresses;
  std::vector<Condition> conditions;
  int64_t observed_generation = 0;
  static const Fields<VirtualMachineStatus>& describe();
};

using VirtualMachine = Resource<VirtualMachineSpec, VirtualMachineStatus>;

struct PoolMemberTemplate {
  StringMap labels;
  StringMap annotations;
  VirtualMachineSpec spec;
  static const Fields<PoolMemberTemplate>& describe();
};

struct PoolAddressing {
  std::string interface;
  std::vector<std::string> pool;
  int32_t prefix = 0;
  std::string gateway;
  std::vector<std::string> nameservers;
  std::string domain;
  static const Fields<PoolAddressing>& describe();
};

struct VirtualMachinePoolSpec {
  int32_t warm_replicas = 0;
  std::optional<int32_t> max_replicas;
  int32_t max_surge = 2;
  PoolMemberTemplate template_;
  std::optional<PoolAddressing> addressing;
  std::string readiness;
  int32_t provisioning_timeout_seconds = 1800;
  std::optional<int32_t> max_idle_seconds;
  bool recycle_on_image_change = true;
  static const Fields<VirtualMachinePoolSpec>& describe();
};

struct VirtualMachinePoolStatus {
  int32_t replicas = 0;
  int32_t warm_replicas = 0;  // unclaimed members: what spec.warmReplicas asks for
  std::string selector;       // label selector of the unclaimed members (scale subresource)
  int32_t available = 0;
  int32_t provisioning = 0;
  int32_t claimed = 0;
  std::string image_revision;
  std::vector<Condition> conditions;
  int64_t observed_generation = 0;
  static const Fields<VirtualMachinePoolStatus>& describe();
};

using VirtualMachinePool = Resource<VirtualMachinePoolSpec, VirtualMachinePoolStatus>;

struct ClaimSubject {
  std::string id;
  std::string issuer;
  static const Fields<ClaimSubject>& describe();
};

struct VirtualMachineClaimSpec {
  LocalObjectReference pool_ref;
  ClaimSubject subject;
  static const Fields<VirtualMachineClaimSpec>& describe();
};

struct VirtualMachineClaimStatus {
  std::optional<LocalObjectReference> member_ref;
  std::vector<MachineAddress> addresses;
  std::string observed_power_state;
  std::vector<std::string> tpm_endorsement_certificates;
  std::vector<Condition> conditions;
  int64_t observed_generation = 0;
  static const Fields<VirtualMachineClaimStatus>& describe();
};

using VirtualMachineClaim = Resource<VirtualMachineClaimSpec, VirtualMachineClaimStatus>;

}  // namespace banlieue::api
