#include "host/roles/controller/claim_reconciler.h"

#include "host/api/codec.h"
#include "host/common/logging.h"
#include "host/kube/api_error.h"
#include "host/roles/controller/infra_builder.h"
#include "host/roles/controller/pool_reconciler.h"
#include "host/roles/controller/status_mirror.h"
#include "host/roles/controller/vm_reconciler.h"
#include "host/runtime/object_helpers.h"

#include <banlieue/sdk/json.h>

#include <algorithm>
#include <limits>

namespace banlieue::controller {
namespace {

namespace json = sdk::json;
using runtime::Result;
using namespace std::chrono_literals;

std::string encodeClaimStatus(const api::VirtualMachineClaimStatus& status) {
  api::VirtualMachineClaim holder;
  holder.status = status;
  auto doc = json::parse(api::toJson(holder), "claim status");
  const auto* encoded = json::find(&doc, "status");
  return encoded == nullptr ? std::string("{}") : json::serialize(*encoded);
}

const api::OwnerReference* controllerOwner(const api::VirtualMachine& vm) {
  for (const auto& ref : vm.metadata.owner_references) {
    if (ref.controller.value_or(false)) return &ref;
  }
  return nullptr;
}

// Owned by this claim: the uid, not the name, so a claim deleted and created again under the
// same name never inherits the old one's member (the garbage collector is about to delete it).
bool ownedByClaim(const api::VirtualMachine& vm, const api::VirtualMachineClaim& claim) {
  const auto* owner = controllerOwner(vm);
  return owner != nullptr && owner->kind == "VirtualMachineClaim" &&
         owner->uid == claim.metadata.uid;
}

std::string labelOf(const api::VirtualMachine& vm, const char* key) {
  auto it = vm.metadata.labels.find(key);
  return it == vm.metadata.labels.end() ? std::string() : it->second;
}

// An unclaimed, live member of `pool` that the pool itself controls, whose readiness condition
// is True (what pool_reconciler counts as available).
bool bindable(const api::VirtualMachine& vm, const api::VirtualMachinePool& pool) {
  if (labelOf(vm, kPoolLabel) != pool.metadata.name) return false;
  if (vm.metadata.labels.count(kClaimLabel) > 0) return false;
  if (!vm.metadata.deletion_timestamp.empty()) return false;
  const auto* owner = controllerOwner(vm);
  if (owner == nullptr || owner->kind != "VirtualMachinePool" || owner->uid != pool.metadata.uid)
    return false;
  const std::string readiness = pool.spec.readiness.empty()
                                    ? std::string(conditions::kInfrastructureReady)
                                    : pool.spec.readiness;
  const auto* ready = findCondition(vm.status.conditions, readiness);
  return ready != nullptr && ready->status == "True";
}

void setUnbound(api::VirtualMachineClaimStatus& status, const std::string& reason,
                const std::string& message, int64_t generation, const std::string& now) {
  status.addresses.clear();
  status.observed_power_state.clear();
  status.tpm_endorsement_certificates.clear();
  setCondition(status.conditions, claim_reasons::kBound, "False", reason, message, generation, now);
  setCondition(status.conditions, conditions::kReady, "False", reason, message, generation, now);
}

}  // namespace

int poolMemberOrdinal(const std::string& pool, const std::string& member) {
  if (member.size() <= pool.size() + 1 || member.compare(0, pool.size() + 1, pool + "-") != 0)
    return -1;
  const std::string digits = member.substr(pool.size() + 1);
  if (digits.size() > 9 ||
      !std::all_of(digits.begin(), digits.end(), [](char c) { return c >= '0' && c <= '9'; }))
    return -1;
  return std::stoi(digits);
}

ClaimPlan planClaim(const api::VirtualMachineClaim& claim, const api::VirtualMachinePool* pool,
                    const std::vector<api::VirtualMachine>& vms, const std::string& now) {
  ClaimPlan plan;
  plan.status = claim.status;
  auto& status = plan.status;
  const int64_t generation = claim.metadata.generation;
  const std::string& pool_name = claim.spec.pool_ref.name;
  const auto* was_bound = findCondition(claim.status.conditions, claim_reasons::kBound);
  const bool was_bound_true = was_bound != nullptr && was_bound->status == "True";
  const bool was_lost = was_bound != nullptr && was_bound->reason == claim_reasons::kMemberLost;

  auto byName = [&](const std::string& name) -> const api::VirtualMachine* {
    for (const auto& vm : vms)
      if (vm.metadata.name == name) return &vm;
    return nullptr;
  };

  // Which member is this claim's: the one its status names (single-use: once named, never
  // another), else one already carrying its label and ownerReference (a controller that died
  // between the bind and the status write), else one to bind now.
  std::string member_name;
  const api::VirtualMachine* member = nullptr;
  if (status.member_ref && !status.member_ref->name.empty()) {
    member_name = status.member_ref->name;
    member = byName(member_name);
    // The pool reuses the names of deleted members: a VM of that name not owned by this claim
    // is somebody else's.
    if (member != nullptr && !ownedByClaim(*member, claim)) member = nullptr;
  } else {
    for (const auto& vm : vms) {
      if (labelOf(vm, kClaimLabel) == claim.metadata.name && ownedByClaim(vm, claim)) {
        member = &vm;
        member_name = vm.metadata.name;
        break;
      }
    }
    if (member == nullptr) {
      if (pool == nullptr || !pool->metadata.deletion_timestamp.empty()) {
        setUnbound(status, claim_reasons::kPoolNotFound,
                   pool == nullptr ? "VirtualMachinePool " + pool_name + " not found"
                                   : "VirtualMachinePool " + pool_name + " is being deleted",
                   generation, now);
      } else {
        std::vector<const api::VirtualMachine*> candidates;
        for (const auto& vm : vms)
          if (bindable(vm, *pool)) candidates.push_back(&vm);
        // Oldest first: the member warm the longest; names the pool did not make go last.
        auto order = [&](const api::VirtualMachine* vm) {
          int ordinal = poolMemberOrdinal(pool_name, vm->metadata.name);
          return std::make_pair(ordinal < 0 ? std::numeric_limits<int>::max() : ordinal,
                                vm->metadata.name);
        };
        std::sort(candidates.begin(), candidates.end(),
                  [&](const auto* a, const auto* b) { return order(a) < order(b); });
        if (candidates.empty()) {
          plan.waiting = true;
          setUnbound(status, claim_reasons::kNoMemberAvailable,
                     "no available unclaimed member in VirtualMachinePool " + pool_name, generation,
                     now);
        } else {
          member = candidates.front();
          member_name = member->metadata.name;
          plan.bind = member_name;
          plan.bind_resource_version = member->metadata.resource_version;
        }
      }
    }
  }

  if (!member_name.empty()) status.member_ref = api::LocalObjectReference{member_name};
  if (!member_name.empty() && (member == nullptr || !member->metadata.deletion_timestamp.empty())) {
    setUnbound(status, claim_reasons::kMemberLost,
               member == nullptr ? "member " + member_name + " no longer exists"
                                 : "member " + member_name + " is being deleted",
               generation, now);
  } else if (member != nullptr) {
    status.addresses = member->status.addresses;
    status.observed_power_state = member->status.observed_power_state;
    status.tpm_endorsement_certificates = member->status.tpm_endorsement_certificates;
    setCondition(status.conditions, claim_reasons::kBound, "True", claim_reasons::kBound,
                 "bound to member " + member_name, generation, now);
    if (const auto* ready = findCondition(member->status.conditions, conditions::kReady)) {
      setCondition(status.conditions, conditions::kReady, ready->status, ready->reason,
                   ready->message, generation, now);
    } else {
      setCondition(status.conditions, conditions::kReady, "False", "MemberNotReady",
                   "member " + member_name + " has not reported Ready yet", generation, now);
    }
  }
  status.observed_generation = generation;
  plan.status_changed = encodeClaimStatus(status) != encodeClaimStatus(claim.status);

  const auto* bound = findCondition(status.conditions, claim_reasons::kBound);
  if (bound != nullptr && bound->status == "True" && !was_bound_true) {
    plan.event = ClaimPlan::Event::kBound;
  } else if (bound != nullptr && bound->reason == claim_reasons::kMemberLost && !was_lost) {
    plan.event = ClaimPlan::Event::kMemberLost;
  }
  return plan;
}

std::string boundMemberBody(const rapidjson::Value& vm, const api::VirtualMachineClaim& claim,
                            const std::string& planned_resource_version) {
  rapidjson::Document body;
  body.CopyFrom(vm, body.GetAllocator());
  auto& a = body.GetAllocator();
  auto& metadata = body["metadata"];
  metadata.RemoveMember("managedFields");
  metadata.RemoveMember("resourceVersion");
  metadata.AddMember("resourceVersion", json::stringValue(planned_resource_version, a), a);
  if (!metadata.HasMember("labels") || !metadata["labels"].IsObject()) {
    metadata.RemoveMember("labels");
    metadata.AddMember("labels", rapidjson::Value(rapidjson::kObjectType), a);
  }
  auto& labels = metadata["labels"];
  labels.RemoveMember(kClaimLabel);
  labels.AddMember(rapidjson::StringRef(kClaimLabel), json::stringValue(claim.metadata.name, a), a);

  // The pool's controller reference goes (one controller at most); others stay.
  rapidjson::Value refs(rapidjson::kArrayType);
  if (auto it = metadata.FindMember("ownerReferences");
      it != metadata.MemberEnd() && it->value.IsArray()) {
    for (auto& ref : it->value.GetArray()) {
      if (!json::boolean(&ref, "controller")) refs.PushBack(ref, a);
    }
  }
  rapidjson::Value ref(rapidjson::kObjectType);
  ref.AddMember("apiVersion", "banlieue.io/v1alpha1", a);
  ref.AddMember("kind", "VirtualMachineClaim", a);
  ref.AddMember("name", json::stringValue(claim.metadata.name, a), a);
  ref.AddMember("uid", json::stringValue(claim.metadata.uid, a), a);
  ref.AddMember("controller", true, a);
  ref.AddMember("blockOwnerDeletion", true, a);
  refs.PushBack(ref, a);
  metadata.RemoveMember("ownerReferences");
  metadata.AddMember("ownerReferences", refs, a);
  return json::serialize(body);
}

std::vector<std::string> ClaimReconciler::claimsOfPool(const runtime::Object& pool) const {
  const std::string ns = json::stringOr(pool.get(), "metadata.namespace");
  const std::string name = json::stringOr(pool.get(), "metadata.name");
  std::vector<std::string> keys;
  for (const auto& claim : claims_.byIndex("namespace", ns)) {
    if (json::stringOr(claim.get(), "spec.poolRef.name") == name)
      keys.push_back(ns + "/" + json::stringOr(claim.get(), "metadata.name"));
  }
  return keys;
}

std::vector<std::string> ClaimReconciler::claimsOfMember(const runtime::Object& vm) const {
  std::vector<std::string> keys;
  const auto* labels = json::find(vm.get(), "metadata.labels");
  if (labels == nullptr || !labels->IsObject()) return keys;
  const std::string ns = json::stringOr(vm.get(), "metadata.namespace");
  if (auto it = labels->FindMember(kClaimLabel);
      it != labels->MemberEnd() && it->value.IsString()) {
    keys.push_back(ns + "/" + it->value.GetString());
  }
  // A member becoming available (or freed) may satisfy the pool's claims still waiting; bound
  // claims hear about their own member through the label above.
  if (auto it = labels->FindMember(kPoolLabel); it != labels->MemberEnd() && it->value.IsString()) {
    const std::string pool = it->value.GetString();
    for (const auto& claim : claims_.byIndex("namespace", ns)) {
      if (json::stringOr(claim.get(), "spec.poolRef.name") == pool &&
          json::stringOr(claim.get(), "status.memberRef.name").empty())
        keys.push_back(ns + "/" + json::stringOr(claim.get(), "metadata.name"));
    }
  }
  return keys;
}

Result ClaimReconciler::reconcile(const runtime::Request& request) {
  auto log = common::logger("controller.claim");
  const std::string key = request.key();
  // After a bind, the caches must show it before planning again: a stale member list would
  // offer this claim a second member.
  if (!expectations_.satisfied(key)) return Result::requeueAfter(250ms);
  auto object = claims_.get(key);
  if (!object) return Result::done();
  auto decoded = api::fromJson<api::VirtualMachineClaim>(json::serialize(*object));
  if (!decoded.ok()) return Result::terminal(decoded.status());
  const auto& claim = *decoded;
  // Releasing is the garbage collector's: the member's ownerReference takes it with the claim.
  if (!claim.metadata.deletion_timestamp.empty()) return Result::done();
  const std::string& ns = claim.metadata.namespace_;

  std::optional<api::VirtualMachinePool> pool;
  if (auto pool_object = pools_.get(ns + "/" + claim.spec.pool_ref.name)) {
    auto decoded_pool = api::fromJson<api::VirtualMachinePool>(json::serialize(*pool_object));
    if (decoded_pool.ok()) pool = std::move(decoded_pool).value();
  }
  std::vector<api::VirtualMachine> vms;
  for (const auto& vm_object : vms_.byIndex("namespace", ns)) {
    auto vm = api::fromJson<api::VirtualMachine>(json::serialize(*vm_object));
    if (vm.ok()) vms.push_back(std::move(vm).value());
  }

  auto plan = planClaim(claim, pool ? &*pool : nullptr, vms, runtime::rfc3339Now());

  if (!plan.bind.empty()) {
    auto member = vms_.get(ns + "/" + plan.bind);
    if (!member) return Result::requeueAfter(100ms);
    auto updated = client_.update(resources::kVirtualMachine, ns, plan.bind,
                                  boundMemberBody(*member, claim, plan.bind_resource_version), "");
    if (!updated.ok()) {
      // Someone else changed the member first (another claim bound it, the pool deleted it):
      // plan again from a cache that has caught up.
      if (kube::isConflict(updated.status()) || kube::isNotFound(updated.status())) {
        log->info("claim {}: member {} changed meanwhile, planning again", key, plan.bind);
        return Result::requeueAfter(100ms);
      }
      return Result::retry(updated.status());
    }
    expectations_.expect(key, &vms_, ns + "/" + plan.bind,
                         json::stringOr(&*updated, "metadata.resourceVersion"));
    log->info("claim {}: bound member {}", key, plan.bind);
  }

  if (plan.status_changed) {
    api::VirtualMachineClaim body;
    body.api_version = "banlieue.io/v1alpha1";
    body.kind = "VirtualMachineClaim";
    body.metadata.name = claim.metadata.name;
    body.metadata.namespace_ = ns;
    body.status = plan.status;
    auto doc = json::parse(api::toJson(body), "claim status");
    doc.RemoveMember("spec");  // its required fields are not this write's
    auto applied = client_.apply(
        resources::kVirtualMachineClaim, ns, claim.metadata.name, json::serialize(doc),
        {.field_manager = kFieldManager, .force = true, .subresource = "status"});
    if (!applied.ok()) return Result::retry(applied.status());
    expectations_.expect(key, &claims_, key, json::stringOr(&*applied, "metadata.resourceVersion"));
  }

  if (events_ != nullptr && plan.status_changed) {
    const std::string member = plan.status.member_ref ? plan.status.member_ref->name : "";
    if (plan.event == ClaimPlan::Event::kBound) {
      events_->normal(*object, claim_reasons::kBound, "Bind", "bound to member " + member);
    } else if (plan.event == ClaimPlan::Event::kMemberLost) {
      const auto* bound = findCondition(plan.status.conditions, claim_reasons::kBound);
      events_->warning(*object, claim_reasons::kMemberLost, "Bind",
                       bound != nullptr ? bound->message : "member " + member + " is gone");
    }
  }
  return plan.waiting ? Result::requeueAfter(30s) : Result::done();
}

}  // namespace banlieue::controller
