#include "plugins/vsphere/src/provider_spec.h"

#include <banlieue/sdk/json.h>

namespace banlieue::vsphere {
namespace {

namespace json = sdk::json;

[[noreturn]] void invalidProviderSpec(const std::string& field, const std::string& what) {
  throw sdk::Error(sdk::Code::kInvalidArgument, "InvalidSpec", "Provider " + field + ": " + what);
}

Target readTarget(const rapidjson::Value* value, const std::string& field) {
  Target target;
  if (value == nullptr) return target;
  if (!value->IsObject()) invalidProviderSpec(field, "must be a map of strings");
  for (const auto& m : value->GetObject()) {
    if (!m.value.IsString())
      invalidProviderSpec(field + "." + m.name.GetString(), "must be a string");
    target[m.name.GetString()] = m.value.GetString();
  }
  return target;
}

std::vector<CapabilityClass> readClasses(const rapidjson::Value* list, const std::string& field) {
  std::vector<CapabilityClass> classes;
  if (list == nullptr) return classes;
  if (!list->IsArray()) invalidProviderSpec(field, "must be a list");
  for (rapidjson::SizeType i = 0; i < list->Size(); ++i) {
    const rapidjson::Value& entry = (*list)[i];
    std::string at = field + "[" + std::to_string(i) + "]";
    CapabilityClass c;
    c.name = json::stringOr(&entry, "name");
    if (c.name.empty()) invalidProviderSpec(at + ".name", "is required");
    c.target = readTarget(json::member(&entry, "target"), at + ".target");
    if (const auto* zones = json::member(&entry, "perZone"); zones != nullptr) {
      if (!zones->IsArray()) invalidProviderSpec(at + ".perZone", "must be a list");
      for (rapidjson::SizeType z = 0; z < zones->Size(); ++z) {
        const rapidjson::Value& zone = (*zones)[z];
        std::string zat = at + ".perZone[" + std::to_string(z) + "]";
        ZoneTarget zt{json::stringOr(&zone, "datacenter"), json::stringOr(&zone, "cluster"),
                      readTarget(json::member(&zone, "target"), zat + ".target")};
        if (zt.datacenter.empty() || zt.cluster.empty()) {
          invalidProviderSpec(zat, "datacenter and cluster are required");
        }
        c.per_zone.push_back(std::move(zt));
      }
    }
    classes.push_back(std::move(c));
  }
  return classes;
}

}  // namespace

const Target* CapabilityClass::targetFor(const std::string& datacenter,
                                         const std::string& cluster) const {
  for (const auto& zone : per_zone) {
    if (zone.datacenter == datacenter && zone.cluster == cluster) return &zone.target;
  }
  return target.empty() ? nullptr : &target;
}

ProviderSpec ProviderSpec::parse(const rapidjson::Value* provider) {
  ProviderSpec spec;
  spec.name = json::stringOr(provider, "metadata.name");
  const rapidjson::Value* s = json::member(provider, "spec");
  const rapidjson::Value* caps = json::member(s, "capabilities");
  spec.storage_classes =
      readClasses(json::member(caps, "storageClasses"), "spec.capabilities.storageClasses");
  spec.network_classes =
      readClasses(json::member(caps, "networkClasses"), "spec.capabilities.networkClasses");
  if (const auto* features = json::member(caps, "features"); features != nullptr) {
    if (!features->IsArray()) invalidProviderSpec("spec.capabilities.features", "must be a list");
    for (const auto& f : features->GetArray()) {
      if (!f.IsString()) invalidProviderSpec("spec.capabilities.features", "must hold strings");
      spec.features.emplace_back(f.GetString());
    }
  }
  if (const auto* list = json::member(s, "failureDomainNameOverrides"); list != nullptr) {
    if (!list->IsArray()) invalidProviderSpec("spec.failureDomainNameOverrides", "must be a list");
    for (rapidjson::SizeType i = 0; i < list->Size(); ++i) {
      const rapidjson::Value& o = (*list)[i];
      NameOverride n{json::stringOr(&o, "datacenter"), json::stringOr(&o, "cluster"),
                     json::stringOr(&o, "name")};
      if (n.datacenter.empty() || n.cluster.empty() || n.name.empty()) {
        invalidProviderSpec("spec.failureDomainNameOverrides[" + std::to_string(i) + "]",
                            "datacenter, cluster and name are required");
      }
      spec.name_overrides.push_back(std::move(n));
    }
  }
  spec.use_content_library = json::boolean(s, "useContentLibrary");
  return spec;
}

}  // namespace banlieue::vsphere
