#include "plugins/vsphere/src/change_feed.h"

#include "plugins/vsphere/src/errors.h"
#include "plugins/vsphere/src/machine.h"

#include <banlieue/sdk/host.h>

namespace banlieue::vsphere {

const std::vector<PropertySpec>& ChangeFeed::watchedProperties() {
  static const std::vector<PropertySpec> kProperties = {
      {"VirtualMachine",
       {"config.instanceUuid", "config.changeVersion", "config.hardware.numCPU",
        "config.hardware.memoryMB", "runtime.powerState", "guest.toolsRunningStatus",
        "guest.ipAddress", "guest.net"}}};
  return kProperties;
}

sdk::Status ChangeFeed::watch(const sdk::Call& call, const sdk::WatchRequest& request,
                              sdk::Reply& reply) {
  return withVimErrors("the change feed of " + client_.url().origin(), [&]() -> sdk::Status {
    {
      std::unique_lock lock(mutex_, std::defer_lock);
      if (!lock.try_lock_for(call.remaining())) {
        return {sdk::Code::kAborted, "FeedBusy",
                "another watch_changes call of this Provider held its change feed until the "
                "deadline"};
      }
      follow(call.deadline());
    }
    return changes_.answer(call, request, reply,
                           [&](std::chrono::milliseconds budget) { poll(call, budget); });
  });
}

void ChangeFeed::follow(Deadline deadline) {
  if (!collector_.empty() && client_.logins() == session_) return;
  forgetCollector(deadline);
  provider_ids_.clear();
  version_.clear();
  collector_ = vim_.createPropertyCollector(deadline);
  session_ = client_.logins();
  try {
    view_ = vim_.createContainerView(client_.content(deadline).root_folder, {"VirtualMachine"},
                                     deadline);
    vim_.createViewFilter(collector_, view_, watchedProperties(), deadline);
    // Version "" answers at once with every VM the filter covers: their state now, which is no
    // change, only where to wait from.
    while (apply(vim_.waitForUpdates(collector_, version_, 0, deadline), false)) {
    }
  } catch (...) {
    forgetCollector(deadline);
    throw;
  }
  if (followed_) changes_.recordAll();
  followed_ = true;
}

void ChangeFeed::forgetCollector(Deadline deadline) {
  // One of an old session died with it; one of this session would go on collecting for nobody.
  if (!collector_.empty() && client_.logins() == session_) {
    try {
      vim_.destroyPropertyCollector(collector_, deadline);
      if (!view_.empty()) vim_.destroyView(view_, deadline);
    } catch (const std::exception& e) {
      BANLIEUE_LOG(kDebug, std::string("vsphere change feed: dropping its collector: ") + e.what());
    }
  }
  collector_ = {};
  view_ = {};
}

void ChangeFeed::poll(const sdk::Call& call, std::chrono::milliseconds budget) {
  const auto until = std::chrono::steady_clock::now() + budget;
  std::unique_lock lock(mutex_, std::defer_lock);
  // Another call's long poll records into the same log: this one's wait is spent behind it.
  if (!lock.try_lock_for(budget)) return;
  const auto left = std::chrono::duration_cast<std::chrono::milliseconds>(
      until - std::chrono::steady_clock::now());
  const auto wait = std::chrono::duration_cast<std::chrono::seconds>(
      std::min<std::chrono::milliseconds>(left, kLongestWait));
  if (wait.count() < 1) {
    // WaitForUpdatesEx counts whole seconds, and 0 answers at once: a budget under a second is
    // spent on the log, without a round trip.
    lock.unlock();
    changes_.waitForNews(std::max(left, std::chrono::milliseconds(0)));
    return;
  }
  const Deadline deadline = call.deadline();
  follow(deadline);  // the collector an earlier call lost
  try {
    apply(vim_.waitForUpdates(collector_, version_, static_cast<int>(wait.count()), deadline),
          true);
  } catch (const VimFault& fault) {
    // The collector went with its session (the client logged in again: an expired session, a
    // restarted vCenter), or the server no longer knows the version: follow again, reporting
    // every machine. Anything else fails the call, and the next one waits from the same version.
    const bool lost = client_.logins() != session_ || fault.type() == "InvalidCollectorVersion" ||
                      fault.kind() == FaultKind::kManagedObjectNotFound;
    if (!lost) throw;
    BANLIEUE_LOG(kInfo, "vsphere change feed at " + client_.url().origin() +
                            " lost its collector (" + fault.type() +
                            "); following again, every machine reported");
    forgetCollector(deadline);
    follow(deadline);
  }
}

bool ChangeFeed::apply(const SoapResponse& updates, bool record) {
  pugi::xml_node set = updates.returnval();
  if (!set) return false;  // nothing changed within the wait
  if (auto version = childText(set, "version")) version_ = *version;
  for (pugi::xml_node filter : children(set, "filterSet")) {
    for (pugi::xml_node object : children(filter, "objectSet")) {
      const std::string vm = readMoRef(child(object, "obj")).value;
      for (pugi::xml_node change : children(object, "changeSet")) {
        if (childText(change, "name") != "config.instanceUuid") continue;
        const std::string uuid = child(change, "val").text().get();
        if (uuid.empty()) continue;
        auto [it, added] = provider_ids_.try_emplace(vm, providerIdOf(uuid));
        if (!added && it->second != providerIdOf(uuid)) {
          if (record) changes_.record(it->second);  // the machine that had the VM lost it
          it->second = providerIdOf(uuid);
        }
      }
      // A VM without an instance UUID yet (one being made) is no machine's until it has one.
      auto known = provider_ids_.find(vm);
      if (known == provider_ids_.end()) continue;
      if (record) changes_.record(known->second);
      if (childText(object, "kind") == "leave") provider_ids_.erase(known);
    }
  }
  return childText(set, "truncated") == "true";
}

}  // namespace banlieue::vsphere
