#include "host/roles/controller/pool_reconciler.h"

#include "host/api/codec.h"
#include "host/api/virtual_machine.h"
#include "host/common/fnv_hash.h"
#include "host/common/logging.h"
#include "host/kube/api_error.h"
#include "host/roles/controller/claim_reconciler.h"
#include "host/roles/controller/infra_builder.h"
#include "host/roles/controller/pool_addressing.h"
#include "host/roles/controller/pool_expiry.h"
#include "host/roles/controller/status_mirror.h"
#include "host/roles/controller/vm_reconciler.h"
#include "host/runtime/object_helpers.h"

#include <banlieue/sdk/json.h>
#include <fmt/format.h>

#include <algorithm>
#include <optional>
#include <set>

namespace banlieue::controller {
namespace {

namespace json = sdk::json;
using runtime::Result;
using namespace std::chrono_literals;

struct Member {
  api::VirtualMachine vm;
  bool claimed = false;
  bool available = false;
  bool stale = false;  // made from an older revision of the image, to be recycled
  bool through_scheduler = false;
  bool terminating = false;
};

std::string encodeStatus(const api::VirtualMachinePoolStatus& status) {
  api::VirtualMachinePool holder;
  holder.status = status;
  auto doc = json::parse(api::toJson(holder), "pool status");
  const auto* encoded = json::find(&doc, "status");
  return encoded == nullptr ? std::string("{}") : json::serialize(*encoded);
}

}  // namespace

std::string imageRevision(const rapidjson::Value& image) {
  std::string content = "sources=";
  if (const auto* sources = json::find(&image, "spec.sources"))
    content += json::serialize(*sources);
  content +=
      "\x1f"
      "checksum=" +
      json::stringOr(&image, "status.buildArtifact.checksum");
  content +=
      "\x1f"
      "build=" +
      json::stringOr(&image, "status.buildArtifact.osArtifactUid");
  return fmt::format("{:016x}", common::fnv1a64(content)).substr(0, 10);
}

std::vector<std::string> poolOfMember(const rapidjson::Value& vm) {
  const auto* labels = json::find(&vm, "metadata.labels");
  if (labels == nullptr || !labels->IsObject()) return {};
  auto it = labels->FindMember(kPoolLabel);
  if (it == labels->MemberEnd() || !it->value.IsString()) return {};
  return {json::stringOr(&vm, "metadata.namespace") + "/" + it->value.GetString()};
}

Result PoolReconciler::reconcile(const runtime::Request& request) {
  auto log = common::logger("controller.pool");
  std::string key = request.key();
  if (!expectations_.satisfied(key)) return Result::requeueAfter(250ms);
  auto object = pools_.get(key);
  if (!object) return Result::done();
  auto decoded = api::fromJson<api::VirtualMachinePool>(json::serialize(*object));
  if (!decoded.ok()) return Result::terminal(decoded.status());
  const auto& pool = *decoded;
  if (!pool.metadata.deletion_timestamp.empty()) return Result::done();  // members cascade
  const std::string& ns = pool.metadata.namespace_;
  const std::string readiness =
      pool.spec.readiness.empty() ? std::string("InfrastructureReady") : pool.spec.readiness;

  // The template image's revision: members of another revision are recycled (when the pool
  // asks for it), new ones made before old ones go, so the warm count never drops for it.
  std::string revision;
  if (images_ != nullptr) {
    if (auto image = images_->get(pool.spec.template_.spec.image_ref.name)) {
      revision = imageRevision(*image);
    }
  }
  std::vector<Member> members;
  for (const auto& vm_object : vms_.byIndex(kPoolMemberIndex, key)) {
    auto vm = api::fromJson<api::VirtualMachine>(json::serialize(*vm_object));
    if (!vm.ok()) continue;
    Member member;
    member.vm = std::move(vm).value();
    member.claimed = member.vm.metadata.labels.count(kClaimLabel) > 0;
    member.terminating = !member.vm.metadata.deletion_timestamp.empty();
    const auto* ready = findCondition(member.vm.status.conditions, readiness);
    member.available = ready != nullptr && ready->status == "True";
    // Placed, not merely judged: members that wait for scheduling (an image not ready yet)
    // would otherwise be placed together later, each before the cache shows the others'
    // placement, and preferred anti-affinity would stack them in one failure domain.
    const auto* scheduled = findCondition(member.vm.status.conditions, conditions::kScheduled);
    member.through_scheduler = scheduled != nullptr && scheduled->status == "True";
    if (pool.spec.recycle_on_image_change && !revision.empty() && !member.claimed) {
      auto it = member.vm.metadata.labels.find(kPoolImageRevisionLabel);
      member.stale = it == member.vm.metadata.labels.end() || it->second != revision;
    }
    members.push_back(std::move(member));
  }

  // Stuck or idle-too-long unclaimed members go first (pool_expiry.h); the next pass sees them
  // terminating and fills their places.
  std::vector<MemberAge> ages;
  for (const auto& m : members) {
    MemberAge age{m.vm.metadata.name,
                  m.claimed,
                  m.terminating,
                  m.available,
                  runtime::parseRfc3339(m.vm.metadata.creation_timestamp).value_or(0),
                  std::nullopt};
    if (const auto* ready = findCondition(m.vm.status.conditions, readiness); ready && m.available)
      age.available_since = runtime::parseRfc3339(ready->last_transition_time);
    ages.push_back(std::move(age));
  }
  const std::time_t now_seconds = std::time(nullptr);
  auto expiries = planExpiries(ages, pool.spec.provisioning_timeout_seconds,
                               pool.spec.max_idle_seconds, now_seconds);
  if (!expiries.expired.empty()) {
    for (const auto& expired : expiries.expired) {
      auto removed = client_.remove(resources::kVirtualMachine, ns, expired.name);
      if (!removed.isOk() && !kube::isNotFound(removed)) return Result::retry(removed);
      log->info("pool {}: {}: {}", key, expired.reason, expired.message);
    }
    return Result::requeueAfter(1s);
  }

  api::VirtualMachinePoolStatus status = pool.status;
  status.replicas = 0;
  status.available = 0;
  status.provisioning = 0;
  status.claimed = 0;
  std::vector<const Member*> unclaimed;  // of the current image revision
  std::vector<const Member*> stale;      // unclaimed, of an older one
  int fresh_available = 0;
  for (const auto& m : members) {
    if (m.terminating) continue;
    ++status.replicas;
    if (m.claimed) {
      ++status.claimed;
    } else if (m.available) {
      ++status.available;
      (m.stale ? stale : unclaimed).push_back(&m);
      if (!m.stale) ++fresh_available;
    } else {
      ++status.provisioning;
      (m.stale ? stale : unclaimed).push_back(&m);
    }
  }
  status.image_revision = revision;
  // What the scale subresource reads: the members spec.warmReplicas counts, and how to list them.
  status.warm_replicas = status.available + status.provisioning;
  status.selector = unclaimedMemberSelector(pool.metadata.name);

  // Scale down: the newest unclaimed members go first, those not yet available before those
  // that are.
  int excess = static_cast<int>(unclaimed.size()) - pool.spec.warm_replicas;
  if (excess > 0) {
    std::sort(unclaimed.begin(), unclaimed.end(), [&](const Member* a, const Member* b) {
      if (a->available != b->available) return !a->available;
      return poolMemberOrdinal(pool.metadata.name, a->vm.metadata.name) >
             poolMemberOrdinal(pool.metadata.name, b->vm.metadata.name);
    });
    for (int i = 0; i < excess; ++i) {
      auto removed = client_.remove(resources::kVirtualMachine, ns, unclaimed[i]->vm.metadata.name);
      if (!removed.isOk() && !kube::isNotFound(removed)) return Result::retry(removed);
      log->info("pool {}: removed member {}", key, unclaimed[i]->vm.metadata.name);
    }
  }

  // Recycle: members of an older image go once fresh ones alone keep the pool warm; at
  // maxReplicas one goes at a time to make room for a fresh one.
  bool at_capacity = pool.spec.max_replicas && status.replicas >= *pool.spec.max_replicas;
  if (!stale.empty() && (fresh_available >= pool.spec.warm_replicas || at_capacity)) {
    std::sort(stale.begin(), stale.end(),
              [](const Member* a, const Member* b) { return !a->available && b->available; });
    const size_t going = fresh_available >= pool.spec.warm_replicas ? stale.size() : 1;
    for (size_t i = 0; i < going; ++i) {
      const auto& old = stale[i]->vm.metadata;
      auto removed = client_.remove(resources::kVirtualMachine, ns, old.name);
      if (!removed.isOk() && !kube::isNotFound(removed)) return Result::retry(removed);
      auto label = old.labels.find(kPoolImageRevisionLabel);
      log->info("pool {}: recycled member {} (image revision {}, now {})", key, old.name,
                label == old.labels.end() ? std::string("none") : label->second, revision);
    }
  }

  // Scale up, one member at a time past the scheduler.
  bool all_scheduled = std::all_of(members.begin(), members.end(), [](const Member& m) {
    return m.through_scheduler || m.terminating;
  });
  // Static addresses: every member's, claimed and terminating ones too, is held until it goes.
  std::optional<AddressDraw> draw;
  if (pool.spec.addressing) {
    std::set<std::string> held;
    for (const auto& m : members) {
      std::string address = heldAddress(m.vm.spec, pool.spec.addressing->interface);
      if (!address.empty()) held.insert(std::move(address));
    }
    draw = drawAddress(*pool.spec.addressing, held);
  }
  const bool addresses_exhausted = draw && !draw->address;
  if (excess < 0 && !at_capacity && all_scheduled && !addresses_exhausted &&
      status.provisioning < std::max(pool.spec.max_surge, 1)) {
    std::set<int> used;
    for (const auto& m : members)
      used.insert(poolMemberOrdinal(pool.metadata.name, m.vm.metadata.name));
    int index = 0;
    while (used.count(index) > 0) ++index;
    api::VirtualMachine vm;
    vm.api_version = "banlieue.io/v1alpha1";
    vm.kind = "VirtualMachine";
    vm.metadata.name = pool.metadata.name + "-" + std::to_string(index);
    vm.metadata.namespace_ = ns;
    vm.metadata.labels = pool.spec.template_.labels;
    vm.metadata.labels[kPoolLabel] = pool.metadata.name;
    if (!revision.empty()) vm.metadata.labels[kPoolImageRevisionLabel] = revision;
    vm.metadata.annotations = pool.spec.template_.annotations;
    vm.metadata.owner_references = {{.api_version = "banlieue.io/v1alpha1",
                                     .kind = "VirtualMachinePool",
                                     .name = pool.metadata.name,
                                     .uid = pool.metadata.uid,
                                     .controller = true,
                                     .block_owner_deletion = true}};
    vm.spec = pool.spec.template_.spec;
    if (draw) assignAddress(vm.spec, *pool.spec.addressing, *draw->address);
    auto doc = json::parse(api::toJson(vm), "member");
    doc.RemoveMember("status");
    auto created = client_.create(resources::kVirtualMachine, ns, json::serialize(doc));
    if (!created.ok() && !kube::isAlreadyExists(created.status()))
      return Result::retry(created.status());
    if (created.ok()) {
      expectations_.expect(key, &vms_, ns + "/" + vm.metadata.name,
                           json::stringOr(&*created, "metadata.resourceVersion"));
      log->info("pool {}: created member {}", key, vm.metadata.name);
      ++status.replicas;
      ++status.provisioning;
      ++status.warm_replicas;
    }
  }

  std::string now = runtime::rfc3339Now();
  int64_t generation = pool.metadata.generation;
  if (status.available >= pool.spec.warm_replicas) {
    setCondition(status.conditions, "Warm", "True", "Warm",
                 std::to_string(status.available) + " member(s) available", generation, now);
  } else {
    setCondition(status.conditions, "Warm", "False", "Filling",
                 std::to_string(status.available) + " of " +
                     std::to_string(pool.spec.warm_replicas) + " member(s) available",
                 generation, now);
  }
  // Entries of spec.addressing.pool that are no address, range or CIDR, named where users look.
  std::string skipped;
  if (draw && !draw->unparsable.empty()) {
    skipped = "; spec.addressing.pool entries skipped as not an IPv4 address, range or CIDR:";
    for (const auto& entry : draw->unparsable) skipped += " '" + entry + "'";
  }
  if (pool.spec.max_replicas && status.replicas >= *pool.spec.max_replicas) {
    setCondition(status.conditions, "Capacity", "False", "MaxReplicasReached",
                 "maxReplicas " + std::to_string(*pool.spec.max_replicas) + " reached" + skipped,
                 generation, now);
  } else if (addresses_exhausted && excess < 0) {
    setCondition(status.conditions, "Capacity", "False", "AddressRangeExhausted",
                 "every address of spec.addressing.pool is held by a member or is the gateway (" +
                     std::to_string(draw->usable) + " usable)" + skipped,
                 generation, now);
  } else {
    setCondition(status.conditions, "Capacity", "True", "Available", "below maxReplicas" + skipped,
                 generation, now);
  }
  status.observed_generation = generation;
  if (encodeStatus(status) != encodeStatus(pool.status)) {
    api::VirtualMachinePool body;
    body.api_version = "banlieue.io/v1alpha1";
    body.kind = "VirtualMachinePool";
    body.metadata.name = pool.metadata.name;
    body.metadata.namespace_ = ns;
    body.status = status;
    auto doc = json::parse(api::toJson(body), "pool status");
    doc.RemoveMember("spec");
    auto applied =
        client_.apply(resources::kVirtualMachinePool, ns, pool.metadata.name, json::serialize(doc),
                      {.field_manager = kFieldManager, .force = true, .subresource = "status"});
    if (!applied.ok()) return Result::retry(applied.status());
    expectations_.expect(key, &pools_, key, json::stringOr(&*applied, "metadata.resourceVersion"));
  }
  // Looked at again when the next member's time is up, whatever else happens meanwhile.
  if (expiries.next_check) {
    return Result::requeueAfter(
        std::chrono::seconds(std::max<std::time_t>(1, *expiries.next_check - now_seconds)));
  }
  return Result::done();
}

}  // namespace banlieue::controller
