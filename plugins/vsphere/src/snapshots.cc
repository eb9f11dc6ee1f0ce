#include "plugins/vsphere/src/snapshots.h"

#include "plugins/vsphere/src/errors.h"
#include "plugins/vsphere/src/machine.h"
#include "plugins/vsphere/src/task_poll.h"

#include <banlieue/sdk/json.h>

#include <optional>

namespace banlieue::vsphere {
namespace {

namespace json = sdk::json;
using sdk::Code;
using sdk::Status;
using Action = sdk::SnapshotRequest::Action;

// A disk-only snapshot, a revert or a removal takes seconds; machine tasks (minutes) poll
// every 2 s, these a little sooner.
constexpr std::chrono::milliseconds kSnapshotPoll{1000};
constexpr std::string_view kSnapshotReason = "SnapshotTaskRunning";

std::string_view phaseOf(Action action) {
  switch (action) {
    case Action::kCreate: return "snapshot-create";
    case Action::kRevert: return "snapshot-revert";
    case Action::kDelete: return "snapshot-delete";
    case Action::kList: break;
  }
  return "snapshot-list";  // list starts no task: no token of it is ever minted
}

void collectSnapshots(const pugi::xml_node& parent, std::string_view element, const MoRef& current,
                      std::vector<SnapshotNode>& out) {
  for (pugi::xml_node tree : children(parent, element)) {
    SnapshotNode node;
    node.ref = readMoRef(child(tree, "snapshot"));
    node.name = childText(tree, "name").value_or("");
    node.created_at = childText(tree, "createTime").value_or("");
    const std::string state = childText(tree, "state").value_or("");
    node.memory = state == "poweredOn" || state == "suspended";
    node.current = !current.empty() && node.ref == current;
    out.push_back(std::move(node));
    collectSnapshots(tree, "childSnapshotList", current, out);
  }
}

// The machine's VM and its snapshot tree.
struct VmSnapshots {
  MoRef vm;
  std::vector<SnapshotNode> snapshots;

  const SnapshotNode* byRef(const std::string& ref) const {
    for (const auto& s : snapshots) {
      if (s.ref.value == ref) return &s;
    }
    return nullptr;
  }
  // vSphere does not keep names unique; the first in tree order is the one create made, since
  // a create always looks here before it makes one.
  const SnapshotNode* byName(const std::string& name) const {
    for (const auto& s : snapshots) {
      if (s.name == name) return &s;
    }
    return nullptr;
  }
};

// FindByUuid, then the VM's snapshot property in one RetrievePropertiesEx; nullopt when the VM
// is gone (also between the two calls).
std::optional<VmSnapshots> readSnapshots(Vim& vim, const std::string& uuid, Deadline deadline) {
  std::optional<MoRef> vm = vim.findByInstanceUuid(uuid, deadline);
  if (!vm) return std::nullopt;
  PropertyResult r;
  try {
    r = vim.retrieveObjects({*vm}, {{"VirtualMachine", {"snapshot"}}}, deadline);
  } catch (const VimFault& fault) {
    if (fault.kind() != FaultKind::kManagedObjectNotFound) throw;
    return std::nullopt;
  }
  if (r.objects.empty()) return std::nullopt;
  return VmSnapshots{*vm, parseSnapshotInfo(r.objects.front().node("snapshot"))};
}

void writeSnapshot(sdk::Reply& reply, const SnapshotNode& snapshot) {
  auto& a = reply.allocator();
  auto& status = reply.status();
  status.RemoveAllMembers();
  status.AddMember("snapshotRef", json::stringValue(snapshot.ref.value, a), a);
  if (!snapshot.created_at.empty()) {
    status.AddMember("createdAt", json::stringValue(snapshot.created_at, a), a);
  }
  status.AddMember("memory", snapshot.memory, a);
}

void writeList(sdk::Reply& reply, const std::vector<SnapshotNode>& snapshots) {
  auto& a = reply.allocator();
  rapidjson::Value list(rapidjson::kArrayType);
  for (const auto& s : snapshots) {
    rapidjson::Value entry(rapidjson::kObjectType);
    entry.AddMember("name", json::stringValue(s.name, a), a);
    entry.AddMember("snapshotRef", json::stringValue(s.ref.value, a), a);
    if (!s.created_at.empty()) entry.AddMember("createdAt", json::stringValue(s.created_at, a), a);
    entry.AddMember("memory", s.memory, a);
    entry.AddMember("current", s.current, a);
    list.PushBack(entry, a);
  }
  reply.status().RemoveAllMembers();
  reply.status().AddMember("snapshots", list, a);
}

std::string machineName(const sdk::SnapshotRequest& request) {
  std::string ns = json::stringOr(request.machine, "metadata.namespace");
  std::string name = json::stringOr(request.machine, "metadata.name");
  return "VSphereMachine " + (ns.empty() ? name : ns + "/" + name);
}

// One snapshot call: the request, where its answer goes, and the names its messages use.
class SnapshotCall {
 public:
  SnapshotCall(Vim& vim, const sdk::Call& call, const sdk::SnapshotRequest& request,
               sdk::Reply& reply, std::string uuid)
      : vim_(vim),
        call_(call),
        request_(request),
        reply_(reply),
        deadline_(call.deadline()),
        uuid_(std::move(uuid)),
        machine_(machineName(request)) {}

  Status run() {
    switch (request_.action) {
      case Action::kCreate: return create();
      case Action::kList: return list();
      case Action::kRevert: return revert();
      case Action::kDelete: return remove();
    }
    return {Code::kInvalidArgument, "InvalidField", "unknown snapshot action"};
  }

  std::string what() const {
    switch (request_.action) {
      case Action::kCreate: return "creation of snapshot " + request_.name + " of " + machine_;
      case Action::kRevert: return "revert of " + machine_ + " to snapshot " + request_.name;
      case Action::kDelete: return "deletion of snapshot " + request_.name + " of " + machine_;
      case Action::kList: break;
    }
    return "listing of the snapshots of " + machine_;
  }

 private:
  // The token this call was given, when it names a task of this action.
  std::optional<TaskToken> pending() const {
    return parseTaskToken(request_.operation_token, phaseOf(request_.action));
  }

  Status vmGone() const {
    return {
        Code::kNotFound, "VMNotFound",
        "the VM of " + machine_ + " (" + request_.provider_id + ") no longer exists in vCenter"};
  }

  Status snapshotGone(const std::string& ref) const {
    return {Code::kNotFound, "SnapshotNotFound",
            "the VM of " + machine_ + " has no snapshot " + (ref.empty() ? request_.name : ref)};
  }

  Status cancelled() const {
    return {Code::kCancelled, "Cancelled", what() + " was cancelled by the host"};
  }

  Status started(std::string_view method, const MoRef& self, const std::string& arguments) {
    MoRef task = vim_.startTask(method, self, arguments, deadline_);
    return taskInProgress(reply_, {std::string(phaseOf(request_.action)), task}, kSnapshotReason,
                          what(), kSnapshotPoll);
  }

  // The snapshot revert and delete act on: the ref create reported, or, without one (create's
  // reply never reached the host), the one create made under the request's name.
  const SnapshotNode* target(const VmSnapshots& vm) const {
    return request_.snapshot_ref.empty() ? vm.byName(request_.name)
                                         : vm.byRef(request_.snapshot_ref);
  }

  Status create() {
    if (auto token = pending()) {
      if (auto stop =
              awaitTask(vim_, *token, kSnapshotReason, what(), kSnapshotPoll, deadline_, reply_)) {
        return *stop;
      }
      // Done, or forgotten by vCenter: the tree below says whether the snapshot exists.
    }
    std::optional<VmSnapshots> vm = readSnapshots(vim_, uuid_, deadline_);
    if (!vm) return vmGone();
    if (const SnapshotNode* existing = vm->byName(request_.name)) {
      endTask(reply_);
      writeSnapshot(reply_, *existing);
      return Status::ok();
    }
    if (call_.cancelled()) return cancelled();
    XmlWriter w;
    w.text("name", request_.name)
        .text("description", request_.description)
        .boolean("memory", request_.memory)
        .boolean("quiesce", false);
    return started("CreateSnapshot_Task", vm->vm, w.str());
  }

  Status list() {
    std::optional<VmSnapshots> vm = readSnapshots(vim_, uuid_, deadline_);
    if (!vm) return vmGone();
    writeList(reply_, vm->snapshots);
    return Status::ok();
  }

  Status revert() {
    bool forgotten = false;
    if (auto token = pending()) {
      TaskPoll polled = pollTask(vim_, token->task, deadline_);
      switch (polled.state) {
        case TaskPoll::State::kRunning:
          return taskInProgress(reply_, *token, kSnapshotReason, what(), kSnapshotPoll);
        case TaskPoll::State::kFailed:
          endFailedTask(reply_);
          // The snapshot was removed while the revert waited for its turn.
          if (polled.info.error->kind() == FaultKind::kManagedObjectNotFound) {
            return snapshotGone(request_.snapshot_ref);
          }
          return polled.info.error->toError(what()).toStatus();
        case TaskPoll::State::kSucceeded: endTask(reply_); return Status::ok();
        case TaskPoll::State::kForgotten: forgotten = true; break;
      }
    }
    std::optional<VmSnapshots> vm = readSnapshots(vim_, uuid_, deadline_);
    if (!vm) return vmGone();
    const SnapshotNode* snapshot = target(*vm);
    if (snapshot == nullptr) return snapshotGone(request_.snapshot_ref);
    endTask(reply_);
    // A revert whose task vCenter forgot (a vCenter restart) is done when the VM runs from the
    // snapshot; reverting again would throw away what the VM did since.
    if (forgotten && snapshot->current) return Status::ok();
    if (call_.cancelled()) return cancelled();
    try {
      return started("RevertToSnapshot_Task", snapshot->ref, {});
    } catch (const VimFault& fault) {
      if (fault.kind() != FaultKind::kManagedObjectNotFound) throw;
      return snapshotGone(snapshot->ref.value);  // removed since the tree was read
    }
  }

  Status remove() {
    if (auto token = pending()) {
      TaskPoll polled = pollTask(vim_, token->task, deadline_);
      switch (polled.state) {
        case TaskPoll::State::kRunning:
          return taskInProgress(reply_, *token, kSnapshotReason, what(), kSnapshotPoll);
        case TaskPoll::State::kFailed:
          if (polled.info.error->kind() != FaultKind::kManagedObjectNotFound) {
            endFailedTask(reply_);
            return polled.info.error->toError(what()).toStatus();
          }
          break;  // already gone: the tree below confirms it
        case TaskPoll::State::kSucceeded:
        case TaskPoll::State::kForgotten: break;
      }
    }
    endTask(reply_);
    // A VM that is gone took its snapshots with it: nothing is left to delete.
    std::optional<VmSnapshots> vm = readSnapshots(vim_, uuid_, deadline_);
    if (!vm) return Status::ok();
    const SnapshotNode* snapshot = target(*vm);
    if (snapshot == nullptr) return Status::ok();
    if (call_.cancelled()) return cancelled();
    XmlWriter w;
    // Its children stay: each is a snapshot of its own, deleted by its own request.
    w.boolean("removeChildren", false);
    try {
      return started("RemoveSnapshot_Task", snapshot->ref, w.str());
    } catch (const VimFault& fault) {
      if (fault.kind() != FaultKind::kManagedObjectNotFound) throw;
      return Status::ok();  // removed since the tree was read
    }
  }

  Vim& vim_;
  const sdk::Call& call_;
  const sdk::SnapshotRequest& request_;
  sdk::Reply& reply_;
  const Deadline deadline_;
  const std::string uuid_;
  const std::string machine_;
};

}  // namespace

std::vector<SnapshotNode> parseSnapshotInfo(const pugi::xml_node& info) {
  std::vector<SnapshotNode> out;
  if (!info) return out;
  pugi::xml_node current = child(info, "currentSnapshot");
  collectSnapshots(info, "rootSnapshotList", current ? readMoRef(current) : MoRef{}, out);
  return out;
}

Status SnapshotManager::handle(const sdk::Call& call, const sdk::SnapshotRequest& request,
                               sdk::Reply& reply) {
  if (request.provider_id.empty()) {
    return {Code::kFailedPrecondition, "MachineNotProvisioned",
            machineName(request) +
                " has no VM yet (no spec.providerID); it can be snapshotted once provisioned"};
  }
  std::optional<std::string> uuid = instanceUuidOf(request.provider_id);
  if (!uuid) {
    return {Code::kInvalidArgument, "InvalidProviderID",
            "spec.providerID '" + request.provider_id + "' of " + machineName(request) +
                " is not vsphere://<instance UUID>"};
  }
  SnapshotCall snapshot_call(vim_, call, request, reply, *uuid);
  return withVimErrors(snapshot_call.what(), [&]() -> Status { return snapshot_call.run(); });
}

}  // namespace banlieue::vsphere
