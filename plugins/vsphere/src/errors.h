// Turns what the vim25 layers throw into the ABI's Status: a VimFault keeps its typed code and
// reason, a transport failure is UNAVAILABLE/ConnectFailed (retryable), a bad endpoint or CA
// bundle is INVALID_ARGUMENT. `context` says what was being done ("clone of ns/vm").
#pragma once

#include "plugins/vsphere/src/http_transport.h"
#include "plugins/vsphere/src/vim_fault.h"

#include <banlieue/sdk/provider.h>

#include <string>

namespace banlieue::vsphere {

sdk::Status transportStatus(const TransportError& error);

// The pending task is finished. Without an "operation" member an OK reply clears the host's
// token (ABI reply rules); "operation": null would too, but sdk/schemas/reconcile.response.json
// does not admit null, so the member is removed instead.
void endTask(sdk::Reply& reply);
// The pending task failed and the call fails: a token no task carries replaces it, so the
// next call re-derives the state from vCenter instead of re-reading the same failed task.
void endFailedTask(sdk::Reply& reply);
// That token. Its text predates the reply's "settled" flag and names no task; objects may
// still store it, and any token without a phase reads as absent.
inline constexpr std::string_view kEndedTaskToken = "settled";

template <class Fn>
sdk::Status withVimErrors(const std::string& context, Fn&& fn) {
  try {
    return fn();
  } catch (const VimFault& fault) {
    return fault.toError(context).toStatus();
  } catch (const TransportError& error) {
    sdk::Status s = transportStatus(error);
    return {s.code(), s.reason(), context + ": " + s.message()};
  } catch (const std::invalid_argument& error) {
    return {sdk::Code::kInvalidArgument, "InvalidSpec", context + ": " + error.what()};
  }
}

}  // namespace banlieue::vsphere
