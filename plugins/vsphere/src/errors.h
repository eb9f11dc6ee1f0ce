// Turns what the vim25 layers throw into the ABI's Status: a VimFault keeps its typed code and
// reason, a transport failure is UNAVAILABLE/ConnectFailed (retryable), a bad endpoint or CA
// bundle is INVALID_ARGUMENT. `context` says what was being done ("clone of ns/vm").
#pragma once

#include "plugins/vsphere/src/http_transport.h"
#include "plugins/vsphere/src/vim_fault.h"

#include <banlieue/sdk/status.h>

#include <string>

namespace banlieue::vsphere {

sdk::Status transportStatus(const TransportError& error);

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
