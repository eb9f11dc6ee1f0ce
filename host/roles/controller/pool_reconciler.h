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
#include <vector>

namespace banlieue::controller {

inline constexpr const char* kPoolLabel = "banlieue.io/pool";
inline constexpr const char* kClaimLabel = "banlieue.io/claim";
// The content revision of the template's VMImage a member was made from (imageRevision).
inline constexpr const char* kPoolImageRevisionLabel = "banlieue.io/pool-image-revision";

// What a VMImage holds, as a short stable value: its sources and the build it produced (the
// artifact's checksum and OSArtifact). A change of any of them is a new revision; an edit that
// does not change the bytes a member boots (labels, retainOnDelete) is not.
std::string imageRevision(const rapidjson::Value& image);

// The pool's unclaimed members as a label selector in text form (status.selector, which the
// scale subresource serves): members of the pool without a claim.
inline std::string unclaimedMemberSelector(const std::string& pool_name) {
  return std::string(kPoolLabel) + "=" + pool_name + ",!" + kClaimLabel;
}

// The VM informer's index of pool members: "<namespace>/<pool>" from the pool label. Added by
// whoever builds the VM informer (addPoolMemberIndex), read by the reconciler and the watch.
inline constexpr const char* kPoolMemberIndex = "poolMember";
std::vector<std::string> poolOfMember(const rapidjson::Value& vm);

class PoolReconciler final : public runtime::Reconciler {
 public:
  // `images` (VMImages, cluster-wide) gives the template's image revision; without it members
  // are never recycled for a new image.
  PoolReconciler(kube::KubeClient& client, runtime::Informer& pools, runtime::Informer& vms,
                 runtime::Informer* images = nullptr)
      : client_(client), pools_(pools), vms_(vms), images_(images) {}
  runtime::Result reconcile(const runtime::Request& request) override;

 private:
  kube::KubeClient& client_;
  runtime::Informer& pools_;
  runtime::Informer& vms_;
  runtime::Informer* images_;
  runtime::WriteExpectations expectations_;
};

}  // namespace banlieue::controller
