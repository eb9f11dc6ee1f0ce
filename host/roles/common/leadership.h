// One way for every leader-elected role to do its work only while it holds its Lease
// (DESIGN.md section 9: a role stops its workers before it gives up its Lease).
//  - The work runs on its own thread from the moment this process leads, with a stop flag of
//    its own.
//  - SIGTERM/SIGINT: the work's flag is set and the work joined while the Lease is still being
//    renewed; only then is the Lease released. A replacement started meanwhile (the operator's
//    Deployments allow it) waits as a candidate instead of acting beside us.
//  - A lost Lease (renewal failed for renewDeadline): the work's flag is set at once, from the
//    elector's step-down. Another candidate may take the Lease leaseDuration after it last saw
//    it renewed, so work still running after leaseDuration - renewDeadline (a plugin call that
//    ignores cancellation) ends the whole process rather than act beside the new leader.
//    Work that returned in time leaves nothing acting, so the process campaigns again as a
//    fresh candidate (ADR 0021, amended): an apiserver outage longer than renewDeadline costs
//    no restart, and the kubelet's crash back-off does not grow with every outage. The work
//    is therefore called once per term and must build what it needs afresh each time.
#pragma once

#include "host/kube/client.h"
#include "host/roles/common/role_process.h"
#include "host/runtime/clock.h"
#include "host/runtime/leader_election.h"

#include <atomic>
#include <chrono>
#include <functional>

namespace banlieue::roles {

enum class LeadershipEnd {
  kStopped,  // a stop signal; the work returned, then the Lease was released
  kLost,     // the Lease was lost and campaign_again was off; the work was stopped at once
};

struct LeadershipOptions {
  // Mirrors "this process leads and its work runs" (a readiness check).
  std::atomic<bool>* leading = nullptr;
  // Called when the work has not returned within leaseDuration - renewDeadline of a lost
  // Lease. The default logs and ends the process at once (std::_Exit, exit code 1): nothing
  // of it may act once another leader can. Tests replace it.
  std::function<void()> abandon;
  runtime::Clock* clock = nullptr;  // the elector's; default the steady clock
  // After a lost Lease and the work's return: campaign again in this process (true) or return
  // kLost so the caller exits.
  bool campaign_again = true;
  // Whether the work still acts outside the apiserver (a plugin call on a backend). Only such
  // work is abandoned after leaseDuration - renewDeadline of a lost Lease. Work that acts
  // through the apiserver alone is waited for (up to stuck_work_limit): what it is blocked on
  // is a request already sent, which lands or fails whether or not the process ends, and its
  // stop flag keeps it from sending more. Unset: the work acts through the apiserver alone.
  std::function<bool()> acting_outside_apiserver;
  // Work blocked longer than this after a lost Lease is abandoned anyway (a deadlock).
  std::chrono::milliseconds stuck_work_limit{std::chrono::minutes(2)};
};

// Campaigns for `config`'s Lease and runs `work(stop)` in each term it leads; returns once
// `signals` asks to stop (or, with campaign_again off, once the Lease is lost), after the work
// has returned. `config`'s callbacks are kept and called as well, once per term.
LeadershipEnd runWhileLeading(kube::KubeClient& client, const runtime::LeaderElectionConfig& config,
                              StopSignal& signals,
                              const std::function<void(const std::atomic<bool>& stop)>& work,
                              const LeadershipOptions& options = {});

}  // namespace banlieue::roles
