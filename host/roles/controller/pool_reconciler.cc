#include "host/roles/controller/pool_reconciler.h"

#include "host/api/codec.h"
#include "host/api/virtual_machine.h"
#include "host/common/logging.h"
#include "host/kube/api_error.h"
#include "host/roles/controller/infra_builder.h"
#include "host/roles/controller/status_mirror.h"
#include "host/roles/controller/vm_reconciler.h"
#include "host/runtime/object_helpers.h"

#include <banlieue/sdk/json.h>

#include <algorithm>
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

int memberIndex(const std::string& pool, const std::string& name) {
  if (name.size() <= pool.size() + 1 || name.compare(0, pool.size() + 1, pool + "-") != 0)
    return -1;
  try {
    size_t used = 0;
    int index = std::stoi(name.substr(pool.size() + 1), &used);
    return used == name.size() - pool.size() - 1 ? index : -1;
  } catch (const std::exception&) {
    return -1;
  }
}

}  // namespace

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

  std::vector<Member> members;
  for (const auto& vm_object : vms_.byIndex("namespace", ns)) {
    auto labels = json::find(vm_object.get(), "metadata.labels");
    if (labels == nullptr || !labels->IsObject()) continue;
    auto pool_label = labels->FindMember(kPoolLabel);
    if (pool_label == labels->MemberEnd() || !pool_label->value.IsString() ||
        pool.metadata.name != pool_label->value.GetString())
      continue;
    auto vm = api::fromJson<api::VirtualMachine>(json::serialize(*vm_object));
    if (!vm.ok()) continue;
    Member member;
    member.vm = std::move(vm).value();
    member.claimed = member.vm.metadata.labels.count(kClaimLabel) > 0;
    member.terminating = !member.vm.metadata.deletion_timestamp.empty();
    const auto* ready = findCondition(member.vm.status.conditions, readiness);
    member.available = ready != nullptr && ready->status == "True";
    member.through_scheduler =
        findCondition(member.vm.status.conditions, conditions::kScheduled) != nullptr;
    members.push_back(std::move(member));
  }

  api::VirtualMachinePoolStatus status = pool.status;
  status.replicas = 0;
  status.available = 0;
  status.provisioning = 0;
  status.claimed = 0;
  std::vector<const Member*> unclaimed;
  for (const auto& m : members) {
    if (m.terminating) continue;
    ++status.replicas;
    if (m.claimed) {
      ++status.claimed;
    } else if (m.available) {
      ++status.available;
      unclaimed.push_back(&m);
    } else {
      ++status.provisioning;
      unclaimed.push_back(&m);
    }
  }
  // What the scale subresource reads: the members spec.warmReplicas counts, and how to list them.
  status.warm_replicas = status.available + status.provisioning;
  status.selector = unclaimedMemberSelector(pool.metadata.name);

  // Scale down: the newest unclaimed members go first, those not yet available before those
  // that are.
  int excess = static_cast<int>(unclaimed.size()) - pool.spec.warm_replicas;
  if (excess > 0) {
    std::sort(unclaimed.begin(), unclaimed.end(), [&](const Member* a, const Member* b) {
      if (a->available != b->available) return !a->available;
      return memberIndex(pool.metadata.name, a->vm.metadata.name) >
             memberIndex(pool.metadata.name, b->vm.metadata.name);
    });
    for (int i = 0; i < excess; ++i) {
      auto removed = client_.remove(resources::kVirtualMachine, ns, unclaimed[i]->vm.metadata.name);
      if (!removed.isOk() && !kube::isNotFound(removed)) return Result::retry(removed);
      log->info("pool {}: removed member {}", key, unclaimed[i]->vm.metadata.name);
    }
  }

  // Scale up, one member at a time past the scheduler.
  bool at_capacity = pool.spec.max_replicas && status.replicas >= *pool.spec.max_replicas;
  bool all_scheduled = std::all_of(members.begin(), members.end(), [](const Member& m) {
    return m.through_scheduler || m.terminating;
  });
  if (excess < 0 && !at_capacity && all_scheduled &&
      status.provisioning < std::max(pool.spec.max_surge, 1)) {
    std::set<int> used;
    for (const auto& m : members) used.insert(memberIndex(pool.metadata.name, m.vm.metadata.name));
    int index = 0;
    while (used.count(index) > 0) ++index;
    api::VirtualMachine vm;
    vm.api_version = "banlieue.io/v1alpha1";
    vm.kind = "VirtualMachine";
    vm.metadata.name = pool.metadata.name + "-" + std::to_string(index);
    vm.metadata.namespace_ = ns;
    vm.metadata.labels = pool.spec.template_.labels;
    vm.metadata.labels[kPoolLabel] = pool.metadata.name;
    vm.metadata.annotations = pool.spec.template_.annotations;
    vm.metadata.owner_references = {{.api_version = "banlieue.io/v1alpha1",
                                     .kind = "VirtualMachinePool",
                                     .name = pool.metadata.name,
                                     .uid = pool.metadata.uid,
                                     .controller = true,
                                     .block_owner_deletion = true}};
    vm.spec = pool.spec.template_.spec;
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
  if (pool.spec.max_replicas && status.replicas >= *pool.spec.max_replicas) {
    setCondition(status.conditions, "Capacity", "False", "MaxReplicasReached",
                 "maxReplicas " + std::to_string(*pool.spec.max_replicas) + " reached", generation,
                 now);
  } else {
    setCondition(status.conditions, "Capacity", "True", "Available", "below maxReplicas",
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
  return Result::done();
}

}  // namespace banlieue::controller
