#include "machine_spec.h"

#include <banlieue/sdk/status.h>

#include <set>

namespace qemu_provider {
namespace {

using banlieue::sdk::Code;
using banlieue::sdk::Error;
namespace json = banlieue::sdk::json;

[[noreturn]] void invalid(const std::string& message) {
  throw Error(Code::kInvalidArgument, "InvalidSpec", message);
}

// Member `field` of `object` (shown as `path` in the message), within [low, high].
int64_t integerIn(const rapidjson::Value* object, const char* field, const std::string& path,
                  int64_t fallback, int64_t low, int64_t high) {
  const rapidjson::Value* value = json::member(object, field);
  if (value == nullptr) return fallback;
  if (!value->IsInt64() || value->GetInt64() < low || value->GetInt64() > high) {
    invalid(path + " must be an integer from " + std::to_string(low) + " to " +
            std::to_string(high));
  }
  return value->GetInt64();
}

bool isName(const std::string& name) {
  return !name.empty() && name.size() <= 32 &&
         name.find_first_not_of("abcdefghijklmnopqrstuvwxyz0123456789-") == std::string::npos;
}

}  // namespace

MachineSpec MachineSpec::parse(const rapidjson::Value* spec) {
  MachineSpec m;
  if (spec != nullptr && !spec->IsObject()) invalid("spec must be an object");
  m.cpus = integerIn(spec, "cpus", "spec.cpus", m.cpus, 1, 64);
  m.memory_mib = integerIn(spec, "memoryMiB", "spec.memoryMiB", m.memory_mib, 64, 1 << 20);
  m.power = json::stringOr(spec, "desiredPowerState", m.power);
  if (m.power != "PoweredOn" && m.power != "PoweredOff" && m.power != "Suspended") {
    invalid("spec.desiredPowerState must be PoweredOn, PoweredOff or Suspended, got '" + m.power +
            "'");
  }
  m.image_ref = json::stringOr(spec, "image.ref");
  // A base image is named, never reached by path: the provider reads nothing outside its
  // state directory on a user's behalf.
  if (!m.image_ref.empty() &&
      (m.image_ref.find('/') != std::string::npos || m.image_ref == "." || m.image_ref == "..")) {
    invalid("spec.image.ref must be the name of a file in the provider's images directory, got '" +
            m.image_ref + "'");
  }
  const rapidjson::Value* disks = json::member(spec, "disks");
  if (disks != nullptr && (!disks->IsArray() || disks->Size() > 16)) {
    invalid("spec.disks must be a list of at most 16 disks (the first is the root disk)");
  }
  std::set<std::string> names;
  if (disks != nullptr) {
    for (rapidjson::SizeType i = 0; i < disks->Size(); ++i) {
      const rapidjson::Value& d = (*disks)[i];
      const std::string where = "spec.disks[" + std::to_string(i) + "]";
      DiskSpec disk;
      disk.name = json::stringOr(&d, "name");
      if (!isName(disk.name)) {
        invalid(where + ".name must be 1..32 characters of a-z, 0-9 and '-'");
      }
      if (!names.insert(disk.name).second) invalid(where + ".name repeats '" + disk.name + "'");
      disk.size_gib = integerIn(&d, "sizeGiB", where + ".sizeGiB", 1, 1, 65536);
      m.disks.push_back(disk);
    }
  }
  if (m.disks.empty()) m.disks.push_back({"root", 1});
  m.wait_for_restart = json::stringOr(spec, "resizePolicy", "Restart") == "WaitForRestart";
  return m;
}

}  // namespace qemu_provider
