#include "host/roles/controller/pool_expiry.h"

#include <algorithm>

namespace banlieue::controller {

ExpiryPlan planExpiries(const std::vector<MemberAge>& members, int32_t provisioning_timeout_seconds,
                        std::optional<int32_t> max_idle_seconds, std::time_t now) {
  ExpiryPlan plan;
  auto consider = [&](const MemberAge& m, std::time_t deadline, const char* reason,
                      const std::string& message) {
    if (deadline <= now) {
      plan.expired.push_back({m.name, reason, message});
    } else {
      plan.next_check = plan.next_check ? std::min(*plan.next_check, deadline) : deadline;
    }
  };
  for (const auto& m : members) {
    if (m.claimed || m.terminating) continue;
    if (!m.available) {
      if (provisioning_timeout_seconds > 0 && m.created > 0) {
        consider(m, m.created + provisioning_timeout_seconds, "ProvisioningTimedOut",
                 "member " + m.name + " was not available " +
                     std::to_string(provisioning_timeout_seconds) +
                     " s after it was created (provisioningTimeoutSeconds); it is replaced");
      }
    } else if (max_idle_seconds && *max_idle_seconds > 0 && m.available_since) {
      consider(m, *m.available_since + *max_idle_seconds, "IdleExpired",
               "member " + m.name + " stayed unclaimed " + std::to_string(*max_idle_seconds) +
                   " s after it became available (maxIdleSeconds); it is recycled");
    }
  }
  return plan;
}

}  // namespace banlieue::controller
