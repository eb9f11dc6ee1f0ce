// The Node object the agent stands for: created when missing (labelled banlieue.io/devnode),
// with capacity from this machine, and a Ready condition whose heartbeat the agent renews, so
// the scheduler places pods here and `kubectl get nodes` shows it Ready.
#pragma once

#include "host/common/status_or.h"
#include "host/kube/client.h"

#include <string>

namespace banlieue::roles::devnode {

struct NodeOptions {
  std::string name;
  bool unschedulable = false;  // for nested agents in tests: nothing lands here by accident
  int max_pods = 110;
  int kubelet_port = 0;  // the log endpoint's port; 0: none served
};

// Creates the Node when missing. OK when it exists already (a restarted agent).
Status registerNode(kube::KubeClient& client, const NodeOptions& options);

// Renews the node's Lease in kube-node-lease (what the node lifecycle controller watches).
Status renewNodeLease(kube::KubeClient& client, const NodeOptions& options);

// Writes capacity, addresses, node info and a Ready=True condition with a fresh heartbeat.
Status postNodeStatus(kube::KubeClient& client, const NodeOptions& options);

}  // namespace banlieue::roles::devnode
