// The controller runtime's names for the host's one Clock (host/common/clock.h): every wait
// for a point in time in the runtime goes through it, and tests pass a FakeClock.
#pragma once

#include "host/common/clock.h"

namespace banlieue::runtime {

using common::Clock;
using common::FakeClock;
using common::SteadyClock;

}  // namespace banlieue::runtime
