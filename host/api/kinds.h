// What crdgen needs to know about each kind besides its fields: names, scope, printer
// columns, categories and the schemas of spec and status.
#pragma once

#include <rapidjson/fwd.h>

#include <map>
#include <optional>
#include <string>
#include <vector>

namespace banlieue::api {

inline constexpr const char* kGroup = "banlieue.io";
inline constexpr const char* kVersion = "v1alpha1";
inline constexpr const char* kInfraGroup = "infrastructure.banlieue.io";
inline constexpr const char* kInfraVersion = "v1beta2";
// CAPI finds an infrastructure provider's version for a contract through this CRD label.
inline constexpr const char* kCapiContractLabel = "cluster.x-k8s.io/v1beta2";

struct PrinterColumn {
  std::string name;
  std::string type;  // string, integer, boolean, date
  std::string json_path;
  std::string description;
  int priority = 0;
};

using SchemaFn = void (*)(rapidjson::Value&,
                          rapidjson::MemoryPoolAllocator<rapidjson::CrtAllocator>&);

// The paths of a kind's scale subresource (`kubectl scale`, HorizontalPodAutoscaler).
struct ScalePaths {
  std::string spec_replicas;
  std::string status_replicas;
  std::string label_selector;  // optional
};

struct KindInfo {
  std::string group;
  std::string version;
  std::string kind;
  std::string plural;
  std::vector<std::string> short_names;
  bool namespaced = true;
  std::string description;
  std::vector<PrinterColumn> columns;
  SchemaFn spec_schema = nullptr;
  SchemaFn status_schema = nullptr;  // null: no status subresource
  std::optional<ScalePaths> scale;   // needs a status
  bool spec_required = false;
  std::map<std::string, std::string> crd_labels;

  std::string singular() const;
  std::string crdName() const { return plural + "." + group; }
  std::string apiVersion() const { return group + "/" + version; }
};

// Common printer columns.
PrinterColumn readyColumn();
PrinterColumn reasonColumn();  // the Ready condition's reason
PrinterColumn ageColumn();

std::vector<KindInfo> virtualMachineKinds();  // VirtualMachine, pool, claim
std::vector<KindInfo> vmClassKinds();         // VMClass, VMImage
std::vector<KindInfo> providerKinds();        // Provider, ProviderClass
std::vector<KindInfo> vsphereKinds();
std::vector<KindInfo> libvirtKinds();
std::vector<KindInfo> proxmoxKinds();
std::vector<KindInfo> snapshotKinds();  // VirtualMachineSnapshot, VirtualMachineRestore

// Every kind banlieue defines, in crdgen's output order.
const std::vector<KindInfo>& builtinKinds();

}  // namespace banlieue::api
