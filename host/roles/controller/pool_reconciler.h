// VirtualMachinePool: keeps `warmReplicas` unclaimed members (never more than `maxReplicas`
// in all) built from the pool's template, and reports replicas, available, provisioning and
// claimed with the Warm and Capacity conditions. Members are VirtualMachines named
// <pool>-<n>, labelled banlieue.io/pool and controller-owned by the pool; a member carrying
// banlieue.io/claim is never touched. A new member is created only once every existing one has
// been through the scheduler, so each member's placement sees its siblings' and a template with
// preferred anti-affinity spreads evenly over failure domains.
#pragma once

#include "host/kube/client.h"
#include "host/runtime/controller.h"
#include "host/runtime/informer.h"
#include "host/runtime/write_expectations.h"

#include <string>

namespace banlieue::controller {

inline constexpr const char* kPoolLabel = "banlieue.io/pool";
inline constexpr const char* kClaimLabel = "banlieue.io/claim";

// The pool's unclaimed members as a label selector in text form (status.selector, which the
// scale subresource serves): members of the pool without a claim.
inline std::string unclaimedMemberSelector(const std::string& pool_name) {
  return std::string(kPoolLabel) + "=" + pool_name + ",!" + kClaimLabel;
}

class PoolReconciler final : public runtime::Reconciler {
 public:
  PoolReconciler(kube::KubeClient& client, runtime::Informer& pools, runtime::Informer& vms)
      : client_(client), pools_(pools), vms_(vms) {}
  runtime::Result reconcile(const runtime::Request& request) override;

 private:
  kube::KubeClient& client_;
  runtime::Informer& pools_;
  runtime::Informer& vms_;
  runtime::WriteExpectations expectations_;
};

}  // namespace banlieue::controller
