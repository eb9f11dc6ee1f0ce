// How many backend creates one Provider runs at once (docs/adr/0049). A create holds a slot
// from the plugin call that starts it until the machine is provisioned, the create fails, or
// the object goes; an IN_PROGRESS create keeps its slot across passes (its operation token is
// in the object's status), so a provider that restarts finds every running create again in
// its cache. Objects that find no free slot wait in line and are woken, first come first
// served, as slots free. Shared by every kind the plugin serves: they share the backend.
#pragma once

#include <deque>
#include <functional>
#include <mutex>
#include <set>
#include <string>
#include <utility>

namespace banlieue::roles::provider {

class CreateSlots {
 public:
  using Wake = std::function<void()>;

  // At most `limit` creates at once (limit < 1: no limit). Read from the Provider on each
  // pass, so an edit applies to the next create; a lower limit takes no slot back.
  void setLimit(int limit);
  // A create already running at the backend (an unprovisioned object with an operation
  // token): counted whatever the limit, as after a restart.
  void hold(const std::string& key);
  // A slot for `key`, an object key "ns/name" (true; again true while it holds one), or false with
  // `wake` queued to be called, outside the lock, once a slot is free for it. A key already in line
  // keeps its place (with the newer `wake`).
  bool acquire(const std::string& key, Wake wake);
  // The create of `key` ended (provisioned, failed, deleted) or it no longer waits.
  void release(const std::string& key);

  int inFlight() const;
  int waiting() const;
  int limit() const;

 private:
  // Wakes the first entries in line that free slots are now reserved for (called unlocked).
  void wakeReserved(std::unique_lock<std::mutex>& lock);

  mutable std::mutex mu_;
  int limit_ = 0;
  std::set<std::string> held_;
  std::deque<std::pair<std::string, Wake>> line_;
  std::set<std::string> woken_;  // in line and told a slot is theirs
};

}  // namespace banlieue::roles::provider
