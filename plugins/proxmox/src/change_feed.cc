#include "plugins/proxmox/src/change_feed.h"

#include "plugins/proxmox/src/errors.h"
#include "plugins/proxmox/src/machine.h"

#include <algorithm>
#include <thread>

namespace banlieue::proxmox {
namespace {

namespace json = sdk::json;
using Clock = std::chrono::steady_clock;

// What a reconcile reports or corrects, as the listing shows it. Not `lock`: a backup's lock
// comes and goes without changing the machine, and what a locking task does change (a
// migration's node, a clone's config) shows here on its own. Not uptime, cpu, mem, disk or the
// I/O counters: they move on every listing of a running guest.
constexpr const char* kReportedFields[] = {"status", "name",   "node",    "tags",
                                           "maxcpu", "maxmem", "maxdisk", "template"};

}  // namespace

GuestListing indexGuests(const rapidjson::Value& resources) {
  GuestListing out;
  for (const auto& entry : resources.GetArray()) {
    // A container is never a ProxmoxMachine's guest.
    if (json::stringOr(&entry, "type", "qemu") != "qemu") continue;
    const int64_t vmid = asInt(json::member(&entry, "vmid"));
    if (vmid <= 0) continue;
    ListedGuest guest;
    guest.provider_id = providerId(json::stringOr(&entry, "node"), vmid);
    for (const char* field : kReportedFields) {
      guest.fingerprint += std::string(field) + "=" + asString(json::member(&entry, field)) + "\n";
    }
    out.emplace(vmid, std::move(guest));
  }
  return out;
}

std::vector<std::string> guestsThatChanged(const GuestListing& before, const GuestListing& after) {
  std::vector<std::string> out;
  for (const auto& [vmid, was] : before) {
    auto now = after.find(vmid);
    if (now == after.end() || now->second.fingerprint != was.fingerprint) {
      out.push_back(was.provider_id);
    }
  }
  for (const auto& [vmid, now] : after) {
    auto was = before.find(vmid);
    if (was == before.end() || was->second.provider_id != now.provider_id) {
      out.push_back(now.provider_id);
    }
  }
  return out;
}

sdk::Status ChangeFeed::watch(const sdk::Call& call, const sdk::WatchRequest& request,
                              sdk::Reply& reply) {
  return withPveErrors("change feed of " + client_.endpoint().origin(), [&]() -> sdk::Status {
    if (request.cursor.empty()) takeBaseline(call);
    return changes_.answer(call, request, reply,
                           [&](std::chrono::milliseconds budget) { poll(call, budget); });
  });
}

GuestListing ChangeFeed::list(const sdk::Call& call) const {
  // listGuests throws on anything but a list: an answer that says nothing of which guests
  // exist must not read as every guest gone.
  return indexGuests(listGuests(client_, call.deadline()));
}

void ChangeFeed::takeBaseline(const sdk::Call& call) {
  {
    std::lock_guard lock(mu_);
    // A host that follows again (its feed restarted) needs no new baseline: what changed since
    // the last listing is news to it too.
    if (last_good_) return;
    next_listing_ = Clock::now() + kListingInterval;
  }
  GuestListing listing = list(call);
  std::lock_guard lock(mu_);
  if (!last_good_) last_good_ = std::move(listing);
}

void ChangeFeed::poll(const sdk::Call& call, std::chrono::milliseconds budget) {
  const auto until = Clock::now() + budget;
  std::unique_lock lock(mu_);
  for (;;) {
    const auto now = Clock::now();
    if (call.cancelled() || now >= until) return;
    if (now >= next_listing_) break;
    // A second at most, to see a cancellation.
    const auto wake = std::min({next_listing_, until, now + std::chrono::seconds(1)});
    lock.unlock();
    std::this_thread::sleep_for(wake - now);
    lock.lock();
  }
  // Due from the attempt on, failed or not: a failing PVE is not asked more often.
  next_listing_ = Clock::now() + kListingInterval;
  lock.unlock();
  GuestListing listing = list(call);
  lock.lock();
  if (last_good_) {
    for (auto& provider_id : guestsThatChanged(*last_good_, listing)) {
      changes_.record(std::move(provider_id));
    }
  }
  last_good_ = std::move(listing);
}

}  // namespace banlieue::proxmox
