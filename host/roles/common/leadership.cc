#include "host/roles/common/leadership.h"

#include "host/common/logging.h"

#include <condition_variable>
#include <cstdlib>
#include <mutex>
#include <thread>

namespace banlieue::roles {

LeadershipEnd runWhileLeading(kube::KubeClient& client, runtime::LeaderElectionConfig config,
                              StopSignal& signals,
                              const std::function<void(const std::atomic<bool>& stop)>& work,
                              LeadershipOptions options) {
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
    if (!elector_stop) {
      lost = true;
      signals.requestStop();
    }
  });

  signals.wait();
  work_stop = true;
  auto join_work = [&] {
    std::thread t;
    {
      std::lock_guard lock(mutex);
      t = std::move(work_thread);
    }
    if (t.joinable()) t.join();
  };
  if (lost) {
    std::unique_lock lock(mutex);
    bool running = work_thread.joinable();
    if (running && !work_returned.wait_for(lock, margin, [&] { return work_done; })) {
      log->error("lost the lease {} and the work has not stopped within {} ms; exiting now", lease,
                 margin.count());
      lock.unlock();
      if (options.abandon) {
        options.abandon();
      } else {
        log->flush();
        std::_Exit(1);
      }
    }
  }
  // While the elector still renews (a clean stop): the Lease outlives every worker.
  join_work();
  elector_stop = true;
  elector_thread.join();
  join_work();  // leadership may have begun while we were stopping; the work returns at once
  if (lost) log->error("lost the lease {}; the work has stopped", lease);
  return lost ? LeadershipEnd::kLost : LeadershipEnd::kStopped;
}

}  // namespace banlieue::roles
