// Static addresses for a pool's members (VirtualMachinePool spec.addressing). The pool's entries
// are single IPv4 addresses, inclusive `low-high` ranges or CIDRs, drawn in list order and each
// from low to high; a member gets the first address no other member of the pool holds (claimed
// and terminating members included: an address is free once its member is gone). An inverted
// range is skipped, a CIDR gives its host addresses (not its network and broadcast addresses
// when it has them), and the gateway is never handed out. An entry that parses as none of the
// three is reported by name and skipped. Pure: the reconciler applies the result.
#pragma once

#include "host/api/virtual_machine.h"

#include <optional>
#include <set>
#include <string>
#include <vector>

namespace banlieue::controller {

struct AddressDraw {
  std::optional<std::string> address;   // the first free address; none when all are held
  std::vector<std::string> unparsable;  // entries that are no address, range or CIDR
  int64_t usable = 0;                   // addresses the parsable entries offer, held or not
};

AddressDraw drawAddress(const api::PoolAddressing& addressing, const std::set<std::string>& held);

// The address `spec` holds on `interface` through its network overrides ("" when none).
std::string heldAddress(const api::VirtualMachineSpec& spec, const std::string& interface);

// Puts `address` with the addressing's prefix, gateway, nameservers and domain on the member's
// override for the addressing interface (added when the template has none for it).
void assignAddress(api::VirtualMachineSpec& spec, const api::PoolAddressing& addressing,
                   const std::string& address);

}  // namespace banlieue::controller
