// VirtualMachineClaim: binds a claim to one available, unclaimed member of its pool and mirrors
// that member's status. Binding labels the member banlieue.io/claim=<claim> and moves its
// controller ownerReference from the pool to the claim in one update guarded by the member's
// resourceVersion, so two claims can never take one member (the loser gets 409 Conflict and
// plans again). From then on the pool leaves the member alone, and deleting the claim deletes
// the member through the garbage collector. Members are single-use: a claim whose member goes
// is MemberLost for good and is never bound again.
#pragma once

#include "host/api/virtual_machine.h"
#include "host/kube/client.h"
#include "host/runtime/controller.h"
#include "host/runtime/events.h"
#include "host/runtime/informer.h"
#include "host/runtime/write_expectations.h"

#include <rapidjson/fwd.h>

#include <string>
#include <vector>

namespace banlieue::controller {

namespace resources {
inline const kube::ResourceType kVirtualMachineClaim{"banlieue.io", "v1alpha1",
                                                     "virtualmachineclaims", true};
}  // namespace resources

namespace claim_reasons {
inline constexpr const char* kBound = "Bound";
inline constexpr const char* kPoolNotFound = "PoolNotFound";
inline constexpr const char* kNoMemberAvailable = "NoMemberAvailable";
inline constexpr const char* kMemberLost = "MemberLost";
}  // namespace claim_reasons

// n for a member named <pool>-<n>, or -1 (the pool names its members so; lower is older).
int poolMemberOrdinal(const std::string& pool, const std::string& member);

// What one reconcile of a claim should do. Pure: computed from the claim, its pool (nullptr
// when absent) and the VirtualMachines of the claim's namespace.
struct ClaimPlan {
  // The member to bind now ("" none). The status below already describes it as bound, and is
  // written only after the bind succeeded.
  std::string bind;
  // The member's resourceVersion in the snapshot the plan chose it from: the bind's guard.
  // The cache may have moved on by the time the bind is written (another claim's worker bound
  // the member meanwhile); guarding with what the plan saw makes that a conflict.
  std::string bind_resource_version;
  api::VirtualMachineClaimStatus status;
  bool status_changed = false;  // status differs from the claim's: write it
  enum class Event { kNone, kBound, kMemberLost };
  Event event = Event::kNone;  // the transition the status write records
  // NoMemberAvailable: the pool's members becoming available wake the claim, a slow requeue
  // is the safety net for a missed event.
  bool waiting = false;
};

ClaimPlan planClaim(const api::VirtualMachineClaim& claim, const api::VirtualMachinePool* pool,
                    const std::vector<api::VirtualMachine>& vms, const std::string& now);

// The member `vm` (its object as the cache holds it) bound to `claim`: the claim label set and
// the controller ownerReference replaced by the claim's (other ownerReferences kept), with
// metadata.resourceVersion = `planned_resource_version` (the version the plan judged bindable),
// so a PUT of it fails with a conflict when anyone changed the member since. managedFields are
// left out (an update without them keeps the server's).
std::string boundMemberBody(const rapidjson::Value& vm, const api::VirtualMachineClaim& claim,
                            const std::string& planned_resource_version);

class ClaimReconciler final : public runtime::Reconciler {
 public:
  // `events` may be null (no event instance configured).
  ClaimReconciler(kube::KubeClient& client, runtime::Informer& claims, runtime::Informer& pools,
                  runtime::Informer& vms, runtime::EventRecorder* events)
      : client_(client), claims_(claims), pools_(pools), vms_(vms), events_(events) {}
  runtime::Result reconcile(const runtime::Request& request) override;

  // For Controller::watchMapped: the claims naming `pool` (every one), and the claims a member
  // concerns (the one its claim label names; the unbound claims of its pool, which it may now
  // satisfy).
  std::vector<std::string> claimsOfPool(const runtime::Object& pool) const;
  std::vector<std::string> claimsOfMember(const runtime::Object& vm) const;

 private:
  kube::KubeClient& client_;
  runtime::Informer& claims_;
  runtime::Informer& pools_;
  runtime::Informer& vms_;
  runtime::EventRecorder* events_;
  runtime::WriteExpectations expectations_;
};

}  // namespace banlieue::controller
