// Which member a VirtualMachineClaim binds and what its status says
// (host/roles/controller/claim_reconciler.h).
#include "host/roles/controller/claim_reconciler.h"

#include "host/roles/controller/pool_reconciler.h"
#include "host/roles/controller/status_mirror.h"

#include <banlieue/sdk/json.h>

#include <gtest/gtest.h>

namespace banlieue::controller {
namespace {

namespace json = sdk::json;

constexpr const char* kNow = "2026-03-01T10:00:00Z";
constexpr const char* kLater = "2026-03-01T11:00:00Z";

api::VirtualMachinePool pool(const std::string& readiness = "GuestReady") {
  api::VirtualMachinePool p;
  p.metadata.name = "web";
  p.metadata.namespace_ = "team";
  p.metadata.uid = "pool-uid";
  p.spec.readiness = readiness;
  return p;
}

api::VirtualMachineClaim claim(const std::string& name = "alice") {
  api::VirtualMachineClaim c;
  c.metadata.name = name;
  c.metadata.namespace_ = "team";
  c.metadata.uid = name + "-uid";
  c.metadata.generation = 1;
  c.spec.pool_ref.name = "web";
  c.spec.subject = {.id = name, .issuer = "https://sso.example.com"};
  return c;
}

// A warm member of pool "web", controlled by it; `ready` sets its readiness conditions.
api::VirtualMachine member(const std::string& name, bool guest_ready = true) {
  api::VirtualMachine vm;
  vm.metadata.name = name;
  vm.metadata.namespace_ = "team";
  vm.metadata.labels[kPoolLabel] = "web";
  vm.metadata.owner_references = {{.api_version = "banlieue.io/v1alpha1",
                                   .kind = "VirtualMachinePool",
                                   .name = "web",
                                   .uid = "pool-uid",
                                   .controller = true,
                                   .block_owner_deletion = true}};
  vm.status.conditions = {
      {.type = "InfrastructureReady", .status = "True", .reason = "Running", .message = "up"},
      {.type = "GuestReady",
       .status = guest_ready ? "True" : "False",
       .reason = guest_ready ? "GuestReported" : "Booting",
       .message = "guest"},
      {.type = "Ready", .status = "True", .reason = "Reconciled", .message = "ready"}};
  vm.status.addresses = {{.type = "InternalIP", .address = "192.0.2.7"}};
  vm.status.observed_power_state = "PoweredOn";
  vm.status.tpm_endorsement_certificates = {"-----BEGIN CERTIFICATE-----\nEK\n"};
  return vm;
}

// `vm` as bound to `c` by a bind that succeeded.
api::VirtualMachine boundTo(api::VirtualMachine vm, const api::VirtualMachineClaim& c) {
  vm.metadata.labels[kClaimLabel] = c.metadata.name;
  vm.metadata.owner_references = {{.api_version = "banlieue.io/v1alpha1",
                                   .kind = "VirtualMachineClaim",
                                   .name = c.metadata.name,
                                   .uid = c.metadata.uid,
                                   .controller = true,
                                   .block_owner_deletion = true}};
  return vm;
}

const api::Condition& cond(const ClaimPlan& plan, const std::string& type) {
  static const api::Condition kMissing{.type = "<missing>"};
  const auto* c = findCondition(plan.status.conditions, type);
  return c == nullptr ? kMissing : *c;
}

// The claim as it reads after the plan's status was written.
api::VirtualMachineClaim written(api::VirtualMachineClaim c, const ClaimPlan& plan) {
  c.status = plan.status;
  return c;
}

TEST(ClaimPlanTest, BindsTheOldestAvailableUnclaimedMemberAndMirrorsIt) {
  auto p = pool();
  auto c = claim();
  std::vector<api::VirtualMachine> vms{member("web-10"), member("web-2", /*guest_ready=*/false),
                                       member("web-3"), boundTo(member("web-0"), claim("bob"))};
  auto going = member("web-1");
  going.metadata.deletion_timestamp = kNow;
  vms.push_back(going);
  auto foreign = member("web-4");
  foreign.metadata.owner_references[0].uid = "another-pool-uid";  // same label, not this pool's
  vms.push_back(foreign);

  auto plan = planClaim(c, &p, vms, kNow);
  EXPECT_EQ(plan.bind, "web-3") << "web-0 is claimed, web-1 terminating, web-2 not GuestReady, "
                                   "web-4 not the pool's; web-3 before web-10 (by index, not text)";
  ASSERT_TRUE(plan.status.member_ref.has_value());
  EXPECT_EQ(plan.status.member_ref->name, "web-3");
  EXPECT_EQ(cond(plan, "Bound").status, "True");
  EXPECT_EQ(cond(plan, "Bound").reason, "Bound");
  EXPECT_EQ(cond(plan, "Ready").status, "True");
  EXPECT_EQ(cond(plan, "Ready").reason, "Reconciled");
  ASSERT_EQ(plan.status.addresses.size(), 1u);
  EXPECT_EQ(plan.status.addresses[0].address, "192.0.2.7");
  EXPECT_EQ(plan.status.observed_power_state, "PoweredOn");
  EXPECT_EQ(plan.status.tpm_endorsement_certificates.size(), 1u);
  EXPECT_EQ(plan.status.observed_generation, 1);
  EXPECT_TRUE(plan.status_changed);
  EXPECT_EQ(plan.event, ClaimPlan::Event::kBound);
  EXPECT_FALSE(plan.waiting);
}

TEST(ClaimPlanTest, AvailabilityFollowsThePoolsReadinessSignal) {
  auto c = claim();
  std::vector<api::VirtualMachine> vms{member("web-0", /*guest_ready=*/false)};
  auto guest = pool("GuestReady");
  EXPECT_EQ(planClaim(c, &guest, vms, kNow).bind, "");
  auto infra = pool("InfrastructureReady");
  EXPECT_EQ(planClaim(c, &infra, vms, kNow).bind, "web-0");
}

TEST(ClaimPlanTest, AClaimFindsTheMemberItBoundBeforeItsStatusWasWritten) {
  auto p = pool();
  auto c = claim();
  std::vector<api::VirtualMachine> vms{member("web-0"), boundTo(member("web-5"), c)};
  auto plan = planClaim(c, &p, vms, kNow);
  EXPECT_EQ(plan.bind, "") << "no second member";
  ASSERT_TRUE(plan.status.member_ref.has_value());
  EXPECT_EQ(plan.status.member_ref->name, "web-5");
  EXPECT_EQ(cond(plan, "Bound").status, "True");
  EXPECT_EQ(plan.event, ClaimPlan::Event::kBound);
}

TEST(ClaimPlanTest, AMemberLeftByAnEarlierClaimOfTheSameNameIsNotAdopted) {
  auto p = pool();
  auto c = claim();
  auto old_claim = claim();
  old_claim.metadata.uid = "deleted-claim-uid";
  std::vector<api::VirtualMachine> vms{boundTo(member("web-0"), old_claim), member("web-1")};
  EXPECT_EQ(planClaim(c, &p, vms, kNow).bind, "web-1");
}

TEST(ClaimPlanTest, ABoundClaimAtRestWritesNothing) {
  auto p = pool();
  auto c = claim();
  std::vector<api::VirtualMachine> vms{member("web-0")};
  auto first = planClaim(c, &p, vms, kNow);
  ASSERT_EQ(first.bind, "web-0");
  auto bound = written(c, first);
  std::vector<api::VirtualMachine> after{boundTo(member("web-0"), c), member("web-1")};
  auto again = planClaim(bound, &p, after, kLater);
  EXPECT_EQ(again.bind, "");
  EXPECT_FALSE(again.status_changed);
  EXPECT_EQ(again.event, ClaimPlan::Event::kNone);
}

TEST(ClaimPlanTest, TheMembersChangesAreMirrored) {
  auto p = pool();
  auto c = claim();
  auto bound = written(c, planClaim(c, &p, {member("web-0")}, kNow));
  auto off = boundTo(member("web-0"), c);
  off.status.observed_power_state = "PoweredOff";
  off.status.conditions[2] = {
      .type = "Ready", .status = "False", .reason = "InfrastructureNotReady", .message = "off"};
  auto plan = planClaim(bound, &p, {off}, kLater);
  EXPECT_TRUE(plan.status_changed);
  EXPECT_EQ(plan.status.observed_power_state, "PoweredOff");
  EXPECT_EQ(cond(plan, "Ready").status, "False");
  EXPECT_EQ(cond(plan, "Ready").reason, "InfrastructureNotReady");
  EXPECT_EQ(cond(plan, "Ready").last_transition_time, kLater);
  EXPECT_EQ(cond(plan, "Bound").last_transition_time, kNow) << "Bound did not change";
  EXPECT_EQ(plan.event, ClaimPlan::Event::kNone);
}

TEST(ClaimPlanTest, AMissingOrDeletedPoolIsPoolNotFound) {
  auto c = claim();
  auto plan = planClaim(c, nullptr, {member("web-0")}, kNow);
  EXPECT_EQ(plan.bind, "");
  EXPECT_FALSE(plan.status.member_ref.has_value());
  EXPECT_EQ(cond(plan, "Bound").status, "False");
  EXPECT_EQ(cond(plan, "Bound").reason, "PoolNotFound");
  EXPECT_EQ(cond(plan, "Ready").reason, "PoolNotFound");
  EXPECT_TRUE(plan.status_changed);
  EXPECT_FALSE(plan.waiting) << "the pool's creation wakes it";
  EXPECT_FALSE(planClaim(written(c, plan), nullptr, {}, kLater).status_changed);

  auto going = pool();
  going.metadata.deletion_timestamp = kNow;
  EXPECT_EQ(cond(planClaim(c, &going, {member("web-0")}, kNow), "Bound").reason, "PoolNotFound");
}

TEST(ClaimPlanTest, NoAvailableMemberWaitsThenBindsOnceOneIs) {
  auto p = pool();
  auto c = claim();
  auto plan = planClaim(c, &p, {member("web-0", /*guest_ready=*/false)}, kNow);
  EXPECT_EQ(plan.bind, "");
  EXPECT_EQ(cond(plan, "Bound").reason, "NoMemberAvailable");
  EXPECT_TRUE(plan.waiting);
  auto waiting = written(c, plan);
  EXPECT_FALSE(planClaim(waiting, &p, {member("web-0", false)}, kLater).status_changed)
      << "no write while nothing changes";
  auto now_ready = planClaim(waiting, &p, {member("web-0")}, kLater);
  EXPECT_EQ(now_ready.bind, "web-0");
  EXPECT_EQ(cond(now_ready, "Bound").status, "True");
  EXPECT_EQ(now_ready.event, ClaimPlan::Event::kBound);
}

TEST(ClaimPlanTest, ALostMemberIsNeverReplaced) {
  auto p = pool();
  auto c = claim();
  auto bound = written(c, planClaim(c, &p, {member("web-0")}, kNow));

  // Gone, while the pool has a fresh member under the same name and another one besides.
  auto lost = planClaim(bound, &p, {member("web-0"), member("web-1")}, kLater);
  EXPECT_EQ(lost.bind, "") << "single-use: never bound again";
  ASSERT_TRUE(lost.status.member_ref.has_value());
  EXPECT_EQ(lost.status.member_ref->name, "web-0");
  EXPECT_EQ(cond(lost, "Bound").status, "False");
  EXPECT_EQ(cond(lost, "Bound").reason, "MemberLost");
  EXPECT_EQ(cond(lost, "Ready").reason, "MemberLost");
  EXPECT_TRUE(lost.status.addresses.empty());
  EXPECT_TRUE(lost.status.observed_power_state.empty());
  EXPECT_EQ(lost.event, ClaimPlan::Event::kMemberLost);
  auto still = planClaim(written(bound, lost), &p, {member("web-1")}, kLater);
  EXPECT_EQ(still.bind, "");
  EXPECT_FALSE(still.status_changed);
  EXPECT_EQ(still.event, ClaimPlan::Event::kNone) << "the warning is given once";

  auto deleting = boundTo(member("web-0"), c);
  deleting.metadata.deletion_timestamp = kLater;
  auto going = planClaim(bound, &p, {deleting}, kLater);
  EXPECT_EQ(cond(going, "Bound").reason, "MemberLost");
  EXPECT_NE(cond(going, "Bound").message.find("being deleted"), std::string::npos);
}

TEST(ClaimPlanTest, TheBindReplacesOnlyThePoolsControllerReference) {
  auto vm = json::parse(R"({"apiVersion":"banlieue.io/v1alpha1","kind":"VirtualMachine",
      "metadata":{"name":"web-0","namespace":"team","resourceVersion":"42",
        "labels":{"banlieue.io/pool":"web"},
        "managedFields":[{"manager":"x"}],
        "ownerReferences":[
          {"apiVersion":"banlieue.io/v1alpha1","kind":"VirtualMachinePool","name":"web",
           "uid":"pool-uid","controller":true,"blockOwnerDeletion":true},
          {"apiVersion":"v1","kind":"ConfigMap","name":"keep","uid":"cm-uid"}]},
      "spec":{"classRef":{"name":"small"},"imageRef":{"name":"img"}}})",
                        "vm");
  auto body = json::parse(boundMemberBody(vm, claim(), "42"), "body");
  EXPECT_EQ(json::stringOr(&body, "metadata.resourceVersion"), "42") << "the update's guard";
  EXPECT_EQ(json::find(&body, "metadata.managedFields"), nullptr);
  EXPECT_STREQ(body["metadata"]["labels"][kClaimLabel].GetString(), "alice");
  EXPECT_STREQ(body["metadata"]["labels"][kPoolLabel].GetString(), "web");
  const auto& refs = body["metadata"]["ownerReferences"];
  ASSERT_EQ(refs.Size(), 2u);
  EXPECT_STREQ(refs[0]["kind"].GetString(), "ConfigMap");
  EXPECT_STREQ(refs[1]["kind"].GetString(), "VirtualMachineClaim");
  EXPECT_STREQ(refs[1]["apiVersion"].GetString(), "banlieue.io/v1alpha1");
  EXPECT_STREQ(refs[1]["name"].GetString(), "alice");
  EXPECT_STREQ(refs[1]["uid"].GetString(), "alice-uid");
  EXPECT_TRUE(refs[1]["controller"].GetBool());
  EXPECT_TRUE(refs[1]["blockOwnerDeletion"].GetBool());
  EXPECT_STREQ(body["spec"]["classRef"]["name"].GetString(), "small") << "the rest unchanged";
}

// Two claims planned from the same snapshot: the second one's worker reads the member from a
// cache that already shows the first bind. Its guard must still be the version it planned
// from, so the apiserver refuses the second bind instead of taking the member from the first.
TEST(ClaimPlanTest, TheBindIsGuardedByTheVersionThePlanSawNotTheOneReadLater) {
  auto p = pool();
  auto m = member("web-0");
  m.metadata.resource_version = "41";
  auto plan = planClaim(claim(), &p, {m}, kNow);
  ASSERT_EQ(plan.bind, "web-0");
  EXPECT_EQ(plan.bind_resource_version, "41");
  auto newer = json::parse(R"({"apiVersion":"banlieue.io/v1alpha1","kind":"VirtualMachine",
      "metadata":{"name":"web-0","namespace":"team","resourceVersion":"57",
        "labels":{"banlieue.io/pool":"web","banlieue.io/claim":"bob"}},
      "spec":{"classRef":{"name":"small"},"imageRef":{"name":"img"}}})",
                           "vm");
  auto body = json::parse(boundMemberBody(newer, claim(), plan.bind_resource_version), "body");
  EXPECT_EQ(json::stringOr(&body, "metadata.resourceVersion"), "41");
}

TEST(ClaimPlanTest, MemberOrdinalsComeFromThePoolsNaming) {
  EXPECT_EQ(poolMemberOrdinal("web", "web-0"), 0);
  EXPECT_EQ(poolMemberOrdinal("web", "web-12"), 12);
  EXPECT_EQ(poolMemberOrdinal("web", "web-"), -1);
  EXPECT_EQ(poolMemberOrdinal("web", "web-1a"), -1);
  EXPECT_EQ(poolMemberOrdinal("web", "webby-1"), -1);
  EXPECT_EQ(poolMemberOrdinal("web", "web-99999999999"), -1);
}

}  // namespace
}  // namespace banlieue::controller
