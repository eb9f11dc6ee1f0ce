// The host's side of watch_changes (ABI 1.4, docs/adr/0057): one long poll per plugin instance
// that tells which machines changed at the backend, so that a machine at rest costs the backend
// nothing per machine. The feed wakes the machines the plugin names (all of them on "all");
// while it answers, a settled machine's resync pass trusts it instead of calling the plugin
// (MachineReconciler::setChangeFeed). A plugin without the slot leaves the feed idle and the
// resync checks each machine as before; a failing feed does too until it answers again.
#pragma once

#include "host/roles/provider/plugin_session.h"
#include "host/roles/provider/runtime_context.h"

#include <atomic>
#include <chrono>
#include <functional>
#include <mutex>
#include <optional>
#include <set>
#include <string>

namespace banlieue::roles::provider {

struct ChangeFeedOptions {
  // The deadline of one long poll: the plugin answers sooner when something changes.
  std::chrono::seconds poll{60};
  // Between failed calls, doubling from one second.
  std::chrono::seconds max_backoff{60};
};

// What the feed acts on: the machines this process reconciles, by their spec.providerID.
struct ChangeFeedTargets {
  // Forgets that each machine named is in sync and queues it.
  std::function<void(const std::set<std::string>& provider_ids)> wake;
  // The same for every machine (an "all" answer).
  std::function<void()> wake_all;
  // The Provider's metadata.uid, the call's object_uid (empty until its informer has it).
  std::function<std::string()> provider_uid;
};

class ChangeFeed {
 public:
  ChangeFeed(RuntimeContext& context, ChangeFeedTargets targets, ChangeFeedOptions options = {});

  // Polls until `stop`; on its own thread.
  void run(const std::atomic<bool>& stop);

  // True when a machine seen in sync at `recorded` needs no check now: the feed has followed
  // the backend without a gap since before then and its last call answered. A feed that never
  // started, failed its last call, or restarted on a new instance after `recorded` says false.
  bool covers(std::chrono::steady_clock::time_point recorded) const;

  // One poll's answer, acted on: exposed for tests. `first` is the answer to a call without a
  // cursor. Returns the next cursor, or nothing when the answer breaks the protocol.
  std::optional<std::string> apply(const std::string& body, bool first);

 private:
  // Marks the feed broken (its last call failed) or following again.
  void setAnswering(bool answering);
  void restart();  // a new instance: the cursor and every guarantee are gone

  RuntimeContext& context_;
  ChangeFeedTargets targets_;
  ChangeFeedOptions options_;
  mutable std::mutex mu_;
  // The first answer of the current instance's feed; unset before it (or after a restart).
  std::optional<std::chrono::steady_clock::time_point> following_since_;
  bool answering_ = false;
};

}  // namespace banlieue::roles::provider
