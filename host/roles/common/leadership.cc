#include "host/roles/common/leadership.h"

#include "host/common/logging.h"

#include <condition_variable>
#include <cstdlib>
#include <mutex>
#include <optional>
#include <thread>

namespace banlieue::roles {
namespace {

// One term: campaign, run the work while leading, and return once the process is asked to stop
// (after the work and then the Lease went) or the Lease was lost (after the work returned).
LeadershipEnd leadOneTerm(kube::KubeClient& client, runtime::LeaderElectionConfig config,
                          StopSignal& signals,
                          const std::function<void(const std::atomic<bool>& stop)>& work,
                          const LeadershipOptions& options) {
  auto log = common::logger("leader-election");
  std::string lease = config.lease_namespace + "/" + config.lease_name;
  std::atomic<bool> work_stop{false};
  std::atomic<bool> elector_stop{false};
  std::atomic<bool> lost{false};
  std::mutex mutex;
  std::condition_variable work_returned;
  bool work_done = false;
  std::thread work_thread;

  auto started = std::move(config.on_started_leading);
  auto stopped = std::move(config.on_stopped_leading);
  config.on_started_leading = [&] {
    if (started) started();
    if (options.leading != nullptr) *options.leading = true;
    std::lock_guard lock(mutex);
    work_thread = std::thread([&] {
      work(work_stop);
      std::lock_guard done_lock(mutex);
      work_done = true;
      work_returned.notify_all();
    });
  };
  // Before the elector releases or gives up anything: the work stops taking new items now.
  config.on_stopped_leading = [&] {
    work_stop = true;
    if (options.leading != nullptr) *options.leading = false;
    if (stopped) stopped();
  };
  auto margin = config.lease_duration - config.renew_deadline;
  runtime::LeaderElector elector(
      client, std::move(config),
      options.clock != nullptr ? *options.clock : runtime::SteadyClock::instance());
  std::thread elector_thread([&] {
    elector.run(elector_stop);
    if (!elector_stop) lost = true;
  });

  const auto& stopping = signals.stopping();
  while (!stopping && !lost) std::this_thread::sleep_for(std::chrono::milliseconds(20));
  work_stop = true;
  auto join_work = [&] {
    std::thread t;
    {
      std::lock_guard lock(mutex);
      t = std::move(work_thread);
    }
    if (t.joinable()) t.join();
  };
  // Wait for the work while the elector still renews. Should the Lease be lost meanwhile
  // (before or during this wait), work still acting outside the apiserver gets
  // leaseDuration - renewDeadline from then, work blocked on the apiserver alone
  // stuck_work_limit (LeadershipOptions).
  {
    std::unique_lock lock(mutex);
    std::optional<std::chrono::steady_clock::time_point> lost_at;
    bool said_waiting = false;
    while (work_thread.joinable() && !work_done) {
      auto now = std::chrono::steady_clock::now();
      if (lost && !lost_at) lost_at = now;
      const bool outside = options.acting_outside_apiserver && options.acting_outside_apiserver();
      const bool past_margin = lost_at && now - *lost_at >= margin;
      if (past_margin && !outside && !said_waiting && now - *lost_at < options.stuck_work_limit) {
        log->warn(
            "lost the lease {}; waiting for the work's requests to the apiserver to return "
            "(at most {} s) before campaigning again",
            lease,
            std::chrono::duration_cast<std::chrono::seconds>(options.stuck_work_limit).count());
        said_waiting = true;
      }
      if (past_margin && (outside || now - *lost_at >= options.stuck_work_limit)) {
        log->error("lost the lease {} and the work has not stopped within {} ms{}; exiting now",
                   lease,
                   std::chrono::duration_cast<std::chrono::milliseconds>(now - *lost_at).count(),
                   outside ? " (a call on the backend is still running)" : "");
        lock.unlock();
        if (options.abandon) {
          options.abandon();
        } else {
          log->flush();
          std::_Exit(1);
        }
        break;
      }
      work_returned.wait_for(lock, std::chrono::milliseconds(20));
    }
  }
  // While the elector still renews (a clean stop): the Lease outlives every worker.
  join_work();
  elector_stop = true;
  elector_thread.join();
  join_work();  // leadership may have begun while we were stopping; the work returns at once
  return lost ? LeadershipEnd::kLost : LeadershipEnd::kStopped;
}

}  // namespace

LeadershipEnd runWhileLeading(kube::KubeClient& client, const runtime::LeaderElectionConfig& config,
                              StopSignal& signals,
                              const std::function<void(const std::atomic<bool>& stop)>& work,
                              const LeadershipOptions& options) {
  auto log = common::logger("leader-election");
  std::string lease = config.lease_namespace + "/" + config.lease_name;
  for (;;) {
    auto end = leadOneTerm(client, config, signals, work, options);
    if (end == LeadershipEnd::kStopped) return end;
    if (!options.campaign_again || signals.stopping()) {
      log->error("lost the lease {}; the work has stopped", lease);
      return end;
    }
    // The work has returned, so nothing of this term acts any more: this process is a
    // candidate like any other, without a restart (and without the kubelet's back-off).
    log->warn("lost the lease {}; the work has stopped; campaigning again", lease);
  }
}

}  // namespace banlieue::roles
