// The NoCloud seed of a LibvirtMachine: meta-data, user-data and (for static addresses)
// network-config v2, packed into an ISO labelled "cidata" that cloud-init finds by label.
#pragma once

#include "plugins/libvirt/src/iso9660.h"
#include "plugins/libvirt/src/machine_spec.h"

#include <string>
#include <vector>

namespace banlieue::libvirt {

// The files of the seed, in a fixed order. user-data is the rendered text as given, or an empty
// #cloud-config when only network-config is needed.
std::vector<IsoFile> noCloudFiles(const MachineSpec& machine);

// The seed image (buildIso9660 with label "cidata").
std::string buildSeedIso(const MachineSpec& machine);

}  // namespace banlieue::libvirt
