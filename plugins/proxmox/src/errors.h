// Turns what the PVE client throws into an ABI Status: PveError keeps PVE's message under a
// specific reason, transport failures are retryable UNAVAILABLE/ConnectFailed (or
// DEADLINE_EXCEEDED), a bad spec is INVALID_ARGUMENT/InvalidSpec.
#pragma once

#include "plugins/proxmox/src/pve_client.h"

#include <banlieue/sdk/provider.h>

namespace banlieue::proxmox {

sdk::Status transportStatus(const TransportError& error, const std::string& context);

template <class Fn>
sdk::Status withPveErrors(const std::string& context, Fn&& fn) {
  try {
    return fn();
  } catch (const PveError& error) {
    return error.toStatus(context);
  } catch (const TransportError& error) {
    return transportStatus(error, context);
  } catch (const sdk::Error& error) {
    return error.toStatus();
  } catch (const std::invalid_argument& error) {
    return {sdk::Code::kInvalidArgument, "InvalidSpec", context + ": " + error.what()};
  }
}

}  // namespace banlieue::proxmox
