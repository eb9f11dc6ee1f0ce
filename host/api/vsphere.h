// infrastructure.banlieue.io/v1beta2 VSphereMachine, VSphereMachineTemplate and VSphereCluster
// (CAPI v1beta2 InfraMachine and InfraCluster contracts). The vSphere plugin parses the same
// field names from the object JSON it is given.
#pragma once

#include "host/api/common.h"
#include "host/api/infra_cluster.h"
#include "host/api/machine_template.h"

namespace banlieue::api {

struct VSphereDisk {
  std::string name;
  int32_t size_gib = 0;
  std::string provisioning = "thin";
  static const Fields<VSphereDisk>& describe();
};

struct VSphereNetworkDevice {
  std::string name;
  std::string port_group;
  std::string mac_address;
  IpamSpec ipam;
  static const Fields<VSphereNetworkDevice>& describe();
};

struct VSphereMachineSpec {
  std::string provider_id;
  std::string failure_domain;
  std::optional<LocalObjectReference> provider_ref;  // absent on Cluster API copies until adopted
  std::string template_;
  std::string template_folder;
  std::string datacenter;
  std::string cluster;
  std::string datastore;
  std::string folder;
  std::string resource_pool;
  int32_t num_cpus = 0;
  int32_t memory_mib = 0;
  std::string firmware;
  bool tpm_enabled = false;
  std::vector<VSphereDisk> disks;
  std::vector<VSphereNetworkDevice> network;
  std::string user_data;
  std::string desired_power_state = "PoweredOn";
  std::string restart_requested_at;
  std::string resize_policy = "Restart";
  std::string created_by;
  static const Fields<VSphereMachineSpec>& describe();
};

struct VSphereMachineStatus {
  std::optional<InitializationStatus> initialization;
  std::string failure_domain;
  std::vector<MachineAddress> addresses;
  std::string vm_ref;
  std::string instance_uuid;
  std::string observed_power_state;
  std::optional<RestartRecord> last_restart;
  std::optional<bool> tpm_attached;
  std::optional<bool> guest_installed;
  std::vector<std::string> tpm_endorsement_certificates;
  std::string operation_token;
  std::vector<Condition> conditions;
  int64_t observed_generation = 0;
  static const Fields<VSphereMachineStatus>& describe();
};

using VSphereMachine = Resource<VSphereMachineSpec, VSphereMachineStatus>;
using VSphereMachineTemplate = Resource<MachineTemplateSpec<VSphereMachineSpec>, NoStatus>;

// The vSphere InfraCluster: the shared shape (host/api/infra_cluster.h).
using VSphereClusterSpec = InfraClusterSpec;
using VSphereClusterStatus = InfraClusterStatus;
using VSphereCluster = InfraCluster;

}  // namespace banlieue::api
