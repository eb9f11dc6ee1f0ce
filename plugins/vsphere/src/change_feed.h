// The change feed of one vSphere Provider (watch_changes, docs/adr/0057): a PropertyCollector of
// the feed's own, with one filter over every VirtualMachine of the vCenter, whose
// WaitForUpdatesEx long poll names the VMs that changed, all of them in one round trip. At rest
// that long poll is the feed's only call, however many machines there are.
#pragma once

#include "plugins/vsphere/src/vim.h"

#include <banlieue/sdk/change_log.h>

#include <chrono>
#include <map>
#include <mutex>
#include <string>
#include <vector>

namespace banlieue::vsphere {

class ChangeFeed {
 public:
  // `client` serves the feed alone: its long poll holds the connection for seconds, and no
  // reconcile may wait behind it.
  explicit ChangeFeed(SoapClient& client) : client_(client), vim_(client) {}

  // Answers one watch_changes call. The first starts following: the VMs' current state is read,
  // and nothing is reported for it.
  sdk::Status watch(const sdk::Call& call, const sdk::WatchRequest& request, sdk::Reply& reply);

  // What a reconcile reports or corrects, of every VM: a change of any of these is a change of
  // its machine. config.changeVersion moves with every edit of the configuration (its devices
  // and extraConfig among them) on vCenter; vcsim keeps it empty, so CPUs and memory are asked
  // for by name too.
  static const std::vector<PropertySpec>& watchedProperties();

  // The longest WaitForUpdatesEx: a call's cancellation is seen between two of them.
  static constexpr std::chrono::seconds kLongestWait{10};

 private:
  // Makes the collector and its filter when there is none, and learns every VM's providerID and
  // the version to wait from. A collector made again (lost with its session, or its version
  // refused) may have missed changes: every machine is reported.
  void follow(Deadline deadline);
  // One long poll of at most `budget` (a Poll of sdk::ChangeLog::answer); records the VMs it
  // names.
  void poll(const sdk::Call& call, std::chrono::milliseconds budget);
  // Reads an UpdateSet: its version and the providerID of each VM it names, recorded when
  // `record`. Returns whether the server truncated it (more follows at once).
  bool apply(const SoapResponse& updates, bool record);
  void forgetCollector(Deadline deadline);

  SoapClient& client_;
  Vim vim_;
  sdk::ChangeLog changes_;
  std::timed_mutex mutex_;  // one WaitForUpdatesEx at a time: they share the collector's version
  MoRef collector_;         // none before the first call, nor after it was lost
  MoRef view_;
  uint64_t session_ = 0;  // client_.logins() when collector_ was made
  std::string version_;
  bool followed_ = false;                            // a collector was made before
  std::map<std::string, std::string> provider_ids_;  // VM moref -> the providerID it answers to
};

}  // namespace banlieue::vsphere
