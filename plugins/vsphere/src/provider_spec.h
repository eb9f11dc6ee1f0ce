// The parts of a banlieue Provider's spec the vSphere plugin acts on (banlieue-spec.md 3.5),
// read from the Provider JSON the host passes to instance_create and introspect.
#pragma once

#include <rapidjson/document.h>

#include <map>
#include <string>
#include <vector>

namespace banlieue::vsphere {

using Target = std::map<std::string, std::string>;

struct ZoneTarget {
  std::string datacenter;
  std::string cluster;
  Target target;
};

// A storage or network class: a default target and per-zone overrides.
struct CapabilityClass {
  std::string name;
  Target target;
  std::vector<ZoneTarget> per_zone;

  // An exact (datacenter, cluster) perZone entry wins, then the default target; nullptr when
  // neither exists (the class is then simply unavailable in that zone).
  const Target* targetFor(const std::string& datacenter, const std::string& cluster) const;
};

struct NameOverride {
  std::string datacenter;
  std::string cluster;
  std::string name;
};

struct ProviderSpec {
  std::string name;
  std::vector<CapabilityClass> storage_classes;
  std::vector<CapabilityClass> network_classes;
  std::vector<std::string> features;
  std::vector<NameOverride> name_overrides;
  bool use_content_library = false;

  // Throws sdk::Error(INVALID_ARGUMENT, "InvalidSpec") naming the offending field.
  static ProviderSpec parse(const rapidjson::Value* provider);
};

}  // namespace banlieue::vsphere
