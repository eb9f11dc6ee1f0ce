// Which unclaimed members of a VirtualMachinePool are past their time. Pure: the pool
// reconciler reads the members' ages, deletes what this says, and looks again at next_check.
//  - provisioningTimeoutSeconds: a member not available that long after it was created is
//    deleted, never repaired (a fresh one replaces it), so a stuck create cannot hold a warm
//    slot forever;
//  - maxIdleSeconds: an available member unclaimed that long after it became available is
//    recycled, so a consumer never gets a machine that sat warm for days.
// Claimed and terminating members are never touched.
#pragma once

#include <cstdint>
#include <ctime>
#include <optional>
#include <string>
#include <vector>

namespace banlieue::controller {

struct MemberAge {
  std::string name;
  bool claimed = false;
  bool terminating = false;
  bool available = false;
  std::time_t created = 0;
  std::optional<std::time_t> available_since;  // when its readiness condition became True
};

struct Expiry {
  std::string name;
  std::string reason;  // ProvisioningTimedOut, IdleExpired
  std::string message;
};

struct ExpiryPlan {
  std::vector<Expiry> expired;
  std::optional<std::time_t> next_check;  // the earliest time another member expires
};

ExpiryPlan planExpiries(const std::vector<MemberAge>& members, int32_t provisioning_timeout_seconds,
                        std::optional<int32_t> max_idle_seconds, std::time_t now);

}  // namespace banlieue::controller
