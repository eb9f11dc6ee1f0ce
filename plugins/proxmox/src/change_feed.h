// The change feed (watch_changes, ABI 1.4, ADR 0057) of a PVE cluster. PVE pushes nothing, but
// one GET /cluster/resources?type=vm lists every guest of the cluster with what a reconcile
// reports of it (power state, name, node, tags, CPUs, memory, boot disk, template). So the feed
// is that listing, made at most once every kListingInterval per instance and compared with the
// last good one: its cost does not grow with the number of machines.
#pragma once

#include "plugins/proxmox/src/pve_client.h"

#include <banlieue/sdk/change_log.h>
#include <banlieue/sdk/provider.h>

#include <chrono>
#include <cstdint>
#include <map>
#include <mutex>
#include <optional>
#include <string>
#include <vector>

namespace banlieue::proxmox {

// pvestatd broadcasts the status of each node's guests every 10 s: listing more often would
// mostly read the previous broadcast again.
constexpr std::chrono::seconds kListingInterval{10};

// One guest of a listing, as far as a reconcile of its machine would report it.
struct ListedGuest {
  std::string provider_id;  // proxmox://<node>/<vmid>, as the machine's reconcile writes it
  std::string fingerprint;  // the listed fields a reconcile reports, nothing that merely moves
};
using GuestListing = std::map<int64_t, ListedGuest>;  // by VMID, unique in a cluster

// The QEMU guests and templates of a /cluster/resources?type=vm answer (an array).
GuestListing indexGuests(const rapidjson::Value& resources);
// The providerIDs of the guests that appeared, changed or vanished from `before` to `after`. A
// guest that moved to another node is named under both, as its machine's spec may still name
// the old one.
std::vector<std::string> guestsThatChanged(const GuestListing& before, const GuestListing& after);

class ChangeFeed {
 public:
  explicit ChangeFeed(const PveClient& client) : client_(client) {}

  // One watch_changes call. The first (cursor "") takes the listing every later one is
  // compared with, and names nothing. A listing that fails names nothing either: the call
  // fails, the host asks again with the same cursor, and the next good listing is compared
  // with the last good one, so no change is lost.
  sdk::Status watch(const sdk::Call& call, const sdk::WatchRequest& request, sdk::Reply& reply);

 private:
  GuestListing list(const sdk::Call& call) const;
  void takeBaseline(const sdk::Call& call);
  // How a call spends its wait: asleep until the next listing is due (within `budget`), then
  // one listing, compared with the last good one and recorded into changes_.
  void poll(const sdk::Call& call, std::chrono::milliseconds budget);

  const PveClient& client_;
  sdk::ChangeLog changes_;
  std::mutex mu_;  // guards what follows; never held across a request to PVE
  std::optional<GuestListing> last_good_;
  std::chrono::steady_clock::time_point next_listing_{};
};

}  // namespace banlieue::proxmox
