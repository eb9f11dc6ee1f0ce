// A TCP port nobody listens on at an IPv4 address right now, for test servers that take their
// port as an argument. The port is closed again before it is returned: another binder may take
// it first, which is harmless on a test machine and fails loudly when it happens.
#pragma once

#include <string>

namespace banlieue::testing {

// 0 when no port could be had (the address is not an IPv4 address of this host).
int freePort(const std::string& address = "127.0.0.1");

}  // namespace banlieue::testing
