// Lease-based leader election with client-go's algorithm and defaults:
//  - a candidate acquires the Lease when it does not exist, when it already holds it, or
//    when the holder has not renewed it for leaseDuration as measured on the candidate's own
//    clock since it last saw the record change (clocks of different machines are never
//    compared);
//  - the leader renews every retryPeriod and stops leading when it has not managed to renew
//    for renewDeadline, even while a renewal request is still hanging: every request of an
//    attempt carries the time left before renewDeadline as its deadline
//    (kube::RequestDeadline), and the step-down does not wait for it;
//  - writes are optimistic (resourceVersion), so two candidates never both win;
//  - a clean shutdown releases the Lease (holder cleared) so the next leader need not wait;
//    on_stopped_leading runs first, so a caller that stops its workers in it (or before setting
//    `stop`, see roles/common/leadership.h) never has them act after the release.
#pragma once

#include "host/kube/client.h"
#include "host/runtime/clock.h"

#include <atomic>
#include <chrono>
#include <functional>
#include <string>

namespace banlieue::runtime {

struct LeaderElectionConfig {
  std::string lease_namespace;
  std::string lease_name;
  std::string identity;  // unique per process, e.g. pod name + random suffix
  std::chrono::milliseconds lease_duration{std::chrono::seconds(15)};
  std::chrono::milliseconds renew_deadline{std::chrono::seconds(10)};
  std::chrono::milliseconds retry_period{std::chrono::seconds(2)};
  bool release_on_cancel = true;
  std::function<void()> on_started_leading;
  std::function<void()> on_stopped_leading;
  std::function<void(const std::string& holder)> on_new_leader;
};

class LeaderElector {
 public:
  LeaderElector(kube::KubeClient& client, LeaderElectionConfig config,
                Clock& clock = SteadyClock::instance());

  // Campaigns until leading, leads until renewal fails or `stop` is set, then returns (after
  // releasing the Lease on a clean stop). Call again to campaign again.
  void run(const std::atomic<bool>& stop);

  bool isLeader() const { return leading_.load(); }
  std::string observedHolder() const;

  // One attempt: true when this candidate holds the Lease afterwards. Exposed for tests.
  bool tryAcquireOrRenew();
  // Attempts so far (campaign and renewals), whatever their outcome: a test's proof that a
  // candidate really campaigned against a live leader, instead of a sleep.
  int64_t attempts() const { return attempts_.load(); }

 private:
  bool waitFor(const std::atomic<bool>& stop, std::chrono::milliseconds period);
  // tryAcquireOrRenew with every request bounded by `budget`.
  bool attemptWithin(std::chrono::milliseconds budget);
  void release();

  kube::KubeClient& client_;
  LeaderElectionConfig config_;
  Clock& clock_;
  std::atomic<bool> leading_{false};
  std::atomic<int64_t> attempts_{0};
  mutable std::mutex mutex_;
  std::string observed_record_;  // holder + renewTime + transitions of the last record seen
  std::string observed_holder_;
  Clock::TimePoint observed_time_{};
};

}  // namespace banlieue::runtime
