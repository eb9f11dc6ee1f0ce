// A QemuMachine's spec as the plugin uses it, read once from the object and checked without
// I/O: validate and reconcile share this one parser, so what validate accepts reconcile can
// run. The fields are banlieue's generic machine spec (docs/provider-contract.md §9).
#pragma once

#include <banlieue/sdk/json.h>

#include <cstdint>
#include <string>
#include <vector>

namespace qemu_provider {

struct DiskSpec {
  std::string name;      // [a-z0-9-], unique in the machine; also its QEMU drive id
  int64_t size_gib = 1;  // the root disk is at least its base image's size
};

struct MachineSpec {
  int64_t cpus = 1;
  int64_t memory_mib = 512;
  std::string power = "PoweredOn";  // PoweredOn, PoweredOff or Suspended
  std::string image_ref;            // a file in <state>/images, the root disk's base; may be empty
  std::vector<DiskSpec> disks;      // never empty: the first is the root disk
  bool wait_for_restart = false;    // spec.resizePolicy: WaitForRestart

  // Reads `spec` (may be null: every default). INVALID_ARGUMENT, reason InvalidSpec, naming
  // the field, for anything QEMU could never run.
  static MachineSpec parse(const rapidjson::Value* spec);
};

}  // namespace qemu_provider
