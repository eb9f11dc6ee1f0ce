// validate(): the checks that need no libvirt connection (admission-time), for LibvirtMachine
// (spec rules, immutable fields, no disk shrink on update) and Provider (endpoint form).
#pragma once

#include <banlieue/sdk/payloads.h>
#include <banlieue/sdk/status.h>

namespace banlieue::libvirt {

sdk::Status validateObject(const sdk::ValidateRequest& request);

}  // namespace banlieue::libvirt
