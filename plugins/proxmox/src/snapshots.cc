#include "plugins/proxmox/src/snapshots.h"

#include <banlieue/sdk/time.h>

#include "plugins/proxmox/src/errors.h"
#include "plugins/proxmox/src/machine.h"
#include "plugins/proxmox/src/task_token.h"

#include <banlieue/sdk/digest.h>
#include <banlieue/sdk/json.h>
#include <banlieue/sdk/uri.h>

#include <algorithm>
#include <ctime>
#include <optional>
#include <vector>

namespace banlieue::proxmox {
namespace {

namespace json = sdk::json;
using sdk::Code;
using sdk::Status;
using Action = sdk::SnapshotRequest::Action;

constexpr std::string_view kSnapshotReason = "SnapshotTaskRunning";
// pve-snapshot-name's maxLength; a mapped name keeps kReadableLength characters of the name,
// a '-' and kHashLength hex digits.
constexpr size_t kMaxSnapname = 40;
constexpr size_t kHashLength = 8;
constexpr size_t kReadableLength = kMaxSnapname - 1 - kHashLength;

bool asciiLetter(char c) {
  return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z');
}

bool configIdChar(char c) {
  return asciiLetter(c) || (c >= '0' && c <= '9') || c == '_' || c == '-';
}

// pve-configid ([A-Za-z][A-Za-z0-9_-]+), at most 40 characters, not the reserved "current".
bool isPveSnapname(std::string_view name) {
  return name.size() >= 2 && name.size() <= kMaxSnapname && asciiLetter(name.front()) &&
         std::all_of(name.begin(), name.end(), configIdChar) && name != "current";
}

std::string_view phaseOf(Action action) {
  switch (action) {
    case Action::kCreate: return "snapshot-create";
    case Action::kRevert: return "snapshot-revert";
    case Action::kDelete: return "snapshot-delete";
    case Action::kList: break;
  }
  return "snapshot-list";  // list starts no task: no token of it is ever minted
}

// One entry of GET /nodes/{node}/qemu/{vmid}/snapshot.
struct PveSnapshot {
  std::string name;
  int64_t snaptime = 0;
  bool vmstate = false;   // the snapshot holds the guest's RAM
  std::string snapstate;  // "prepare" while made, "delete" while deleted; empty when whole
};

// The guest's snapshots, without PVE's "current" pseudo-entry, whose parent names the snapshot
// the running state descends from.
struct GuestSnapshots {
  std::vector<PveSnapshot> snapshots;
  std::string current;

  const PveSnapshot* find(const std::string& name) const {
    for (const auto& s : snapshots) {
      if (s.name == name) return &s;
    }
    return nullptr;
  }
};

// The machine's guest as /cluster/resources shows it now (its node may have changed since
// the providerID was written: a migration).
struct LiveGuest {
  std::string node;
  int64_t vmid = 0;
  std::string lock;
  bool is_template = false;

  std::string path() const {
    return "/nodes/" + sdk::pathSegment(node) + "/qemu/" + std::to_string(vmid);
  }
};

void writeSnapshot(sdk::Reply& reply, const PveSnapshot& snapshot) {
  auto& a = reply.allocator();
  auto& status = reply.status();
  status.RemoveAllMembers();
  status.AddMember("snapshotRef", json::stringValue(snapshot.name, a), a);
  if (snapshot.snaptime > 0) {
    status.AddMember("createdAt", json::stringValue(sdk::rfc3339Utc(snapshot.snaptime), a), a);
  }
  status.AddMember("memory", snapshot.vmstate, a);
}

void writeList(sdk::Reply& reply, const GuestSnapshots& guest) {
  auto& a = reply.allocator();
  rapidjson::Value list(rapidjson::kArrayType);
  for (const auto& s : guest.snapshots) {
    rapidjson::Value entry(rapidjson::kObjectType);
    entry.AddMember("name", json::stringValue(s.name, a), a);
    entry.AddMember("snapshotRef", json::stringValue(s.name, a), a);
    if (s.snaptime > 0)
      entry.AddMember("createdAt", json::stringValue(sdk::rfc3339Utc(s.snaptime), a), a);
    entry.AddMember("memory", s.vmstate, a);
    entry.AddMember("current", s.name == guest.current, a);
    list.PushBack(entry, a);
  }
  reply.status().RemoveAllMembers();
  reply.status().AddMember("snapshots", list, a);
}

std::string machineName(const sdk::SnapshotRequest& request) {
  const std::string ns = json::stringOr(request.machine, "metadata.namespace");
  const std::string name = json::stringOr(request.machine, "metadata.name");
  return "ProxmoxMachine " + (ns.empty() ? name : ns + "/" + name);
}

bool mentions(const std::string& text, std::string_view needle) {
  return text.find(needle) != std::string::npos;
}

// One snapshot call: the request, where its answer goes, and the names its messages use.
class SnapshotCall {
 public:
  SnapshotCall(const PveClient& client, const sdk::Call& call, const sdk::SnapshotRequest& request,
               sdk::Reply& reply, GuestRef ref, std::string machine_uid)
      : client_(client),
        call_(call),
        request_(request),
        reply_(reply),
        deadline_(call.deadline()),
        ref_(std::move(ref)),
        machine_uid_(std::move(machine_uid)),
        machine_(machineName(request)),
        snapname_(request.name.empty() ? std::string() : pveSnapshotName(request.name)),
        // revert and delete act on the ref create reported, or, without one (create's reply
        // never reached the host), on the snapshot create made under the request's name.
        target_(request.snapshot_ref.empty() ? snapname_ : request.snapshot_ref) {}

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
      case Action::kCreate: return "snapshot " + snapname_ + " of " + machine_;
      case Action::kRevert: return "rollback of " + machine_ + " to snapshot " + target_;
      case Action::kDelete: return "deletion of snapshot " + target_ + " of " + machine_;
      case Action::kList: break;
    }
    return "listing of the snapshots of " + machine_;
  }

 private:
  // The token this call was given, when it names a task of this action.
  std::optional<TaskToken> pending() const {
    return parseTaskToken(request_.operation_token, phaseOf(request_.action));
  }

  // The machine's guest, or nullopt when the providerID's VMID is gone or now belongs to a
  // guest that is not this machine's (PVE hands a freed VMID to the next guest it creates).
  std::optional<LiveGuest> locate() const {
    rapidjson::Document all = listGuests(client_, deadline_);
    for (const auto& entry : all.GetArray()) {
      if (json::stringOr(&entry, "type", "qemu") != "qemu") continue;
      if (asInt(json::member(&entry, "vmid")) != ref_.vmid) continue;
      if (!taggedFor(json::stringOr(&entry, "tags"), machine_uid_)) return std::nullopt;
      return LiveGuest{json::stringOr(&entry, "node"), ref_.vmid, json::stringOr(&entry, "lock"),
                       asInt(json::member(&entry, "template")) != 0};
    }
    return std::nullopt;
  }

  // nullopt when the guest went between locate() and this read.
  std::optional<GuestSnapshots> read(const LiveGuest& guest) const {
    rapidjson::Document entries;
    try {
      entries = client_.get(guest.path() + "/snapshot", deadline_);
    } catch (const PveError& e) {
      if (!e.isMissing()) throw;
      return std::nullopt;
    }
    if (!entries.IsArray()) {
      throw sdk::Error(Code::kUnavailable, "MalformedReply",
                       "GET " + guest.path() + "/snapshot answered " +
                           json::serialize(entries).substr(0, 200) + " instead of a list");
    }
    GuestSnapshots out;
    for (const auto& entry : entries.GetArray()) {
      const std::string name = json::stringOr(&entry, "name");
      if (name == "current") {
        out.current = json::stringOr(&entry, "parent");
        continue;
      }
      out.snapshots.push_back({name, asInt(json::member(&entry, "snaptime")),
                               asInt(json::member(&entry, "vmstate")) != 0,
                               json::stringOr(&entry, "snapstate")});
    }
    return out;
  }

  Status vmGone() const {
    return {Code::kNotFound, "VMNotFound",
            "the VM of " + machine_ + " (" + request_.provider_id +
                ") no longer exists in the PVE cluster"};
  }

  Status snapshotGone() const {
    return {Code::kNotFound, "SnapshotNotFound",
            "VM " + std::to_string(ref_.vmid) + " of " + machine_ + " has no snapshot " + target_};
  }

  Status cancelled() const {
    return {Code::kCancelled, "Cancelled", what() + " was cancelled by the host"};
  }

  // Another task holds the guest (a snapshot being made or removed, a backup, a migration):
  // PVE would refuse ours, so the call comes back once the lock is released. The token names
  // no task, so the next call derives the state afresh.
  Status waitFor(const std::string& why) {
    reply_.setOperation("waiting", what() + " waits: " + why);
    reply_.requeueAfter(kTaskPoll);
    return Status::inProgress("Locked", what() + " waits: " + why);
  }

  Status started(const rapidjson::Document& answer) {
    const std::string upid = asString(&answer);
    return taskInProgress(reply_, {std::string(phaseOf(request_.action)), upid, upidNode(upid)},
                          what(), kSnapshotReason);
  }

  Status create() {
    if (auto token = pending()) {
      const TaskPoll polled = pollTask(client_, *token, deadline_);
      if (polled.state == TaskPoll::State::kRunning) {
        return taskInProgress(reply_, *token, what(), kSnapshotReason);
      }
      // "already used": a snapshot of that name exists, ours from an earlier call; the list
      // below answers it. Any other failure is PVE's refusal.
      if (polled.state == TaskPoll::State::kFailed &&
          !mentions(polled.exit_status, "already used")) {
        endFailedTask(reply_);
        return taskFailed(*token, what(), polled.exit_status);
      }
    }
    endTask(reply_);
    std::optional<LiveGuest> guest = locate();
    if (!guest) return vmGone();
    std::optional<GuestSnapshots> snapshots = read(*guest);
    if (!snapshots) return vmGone();
    if (const PveSnapshot* existing = snapshots->find(snapname_)) {
      // Made by a create whose token was lost, and still being made.
      if (!existing->snapstate.empty()) return waitFor("snapshot state " + existing->snapstate);
      writeSnapshot(reply_, *existing);
      return Status::ok();
    }
    if (guest->is_template) {
      return {Code::kFailedPrecondition, "VMIsTemplate",
              "VM " + std::to_string(guest->vmid) + " of " + machine_ +
                  " is a template; PVE takes no snapshot of a template"};
    }
    if (!guest->lock.empty()) return waitFor("the VM is locked (" + guest->lock + ")");
    if (call_.cancelled()) return cancelled();
    Form form{{"snapname", snapname_}};
    if (!request_.description.empty()) form.emplace_back("description", request_.description);
    // vmstate=1 saves the RAM of a running guest; PVE ignores it for a stopped one, and the
    // snapshot's own vmstate (reported as memory) says what it holds.
    if (request_.memory) form.emplace_back("vmstate", "1");
    return started(client_.post(guest->path() + "/snapshot", form, deadline_));
  }

  Status list() {
    std::optional<LiveGuest> guest = locate();
    if (!guest) return vmGone();
    std::optional<GuestSnapshots> snapshots = read(*guest);
    if (!snapshots) return vmGone();
    writeList(reply_, *snapshots);
    return Status::ok();
  }

  Status revert() {
    bool forgotten = false;
    if (auto token = pending()) {
      const TaskPoll polled = pollTask(client_, *token, deadline_);
      switch (polled.state) {
        case TaskPoll::State::kRunning:
          return taskInProgress(reply_, *token, what(), kSnapshotReason);
        case TaskPoll::State::kFailed:
          endFailedTask(reply_);
          // The snapshot was deleted while the rollback waited for its turn.
          if (mentions(polled.exit_status, "does not exist")) return snapshotGone();
          return taskFailed(*token, what(), polled.exit_status);
        case TaskPoll::State::kSucceeded: endTask(reply_); return Status::ok();
        case TaskPoll::State::kForgotten: forgotten = true; break;
      }
    }
    endTask(reply_);
    std::optional<LiveGuest> guest = locate();
    if (!guest) return vmGone();
    std::optional<GuestSnapshots> snapshots = read(*guest);
    if (!snapshots) return vmGone();
    const PveSnapshot* snapshot = snapshots->find(target_);
    if (snapshot == nullptr) return snapshotGone();
    // A rollback whose task PVE forgot is done when the guest runs from the snapshot; rolling
    // back again would throw away what the guest did since.
    if (forgotten && snapshots->current == target_) return Status::ok();
    if (!snapshot->snapstate.empty()) return waitFor("snapshot state " + snapshot->snapstate);
    if (!guest->lock.empty()) return waitFor("the VM is locked (" + guest->lock + ")");
    if (call_.cancelled()) return cancelled();
    return started(client_.post(
        guest->path() + "/snapshot/" + sdk::pathSegment(target_) + "/rollback", {}, deadline_));
  }

  Status remove() {
    if (auto token = pending()) {
      const TaskPoll polled = pollTask(client_, *token, deadline_);
      if (polled.state == TaskPoll::State::kRunning) {
        return taskInProgress(reply_, *token, what(), kSnapshotReason);
      }
      // "does not exist": already gone, which the list below confirms.
      if (polled.state == TaskPoll::State::kFailed &&
          !mentions(polled.exit_status, "does not exist")) {
        endFailedTask(reply_);
        return taskFailed(*token, what(), polled.exit_status);
      }
    }
    endTask(reply_);
    // A guest that is gone took its snapshots with it: nothing is left to delete.
    std::optional<LiveGuest> guest = locate();
    if (!guest) return Status::ok();
    std::optional<GuestSnapshots> snapshots = read(*guest);
    if (!snapshots) return Status::ok();
    const PveSnapshot* snapshot = snapshots->find(target_);
    if (snapshot == nullptr) return Status::ok();
    if (!guest->lock.empty()) return waitFor("the VM is locked (" + guest->lock + ")");
    if (call_.cancelled()) return cancelled();
    return started(
        client_.del(guest->path() + "/snapshot/" + sdk::pathSegment(target_), deadline_));
  }

  const PveClient& client_;
  const sdk::Call& call_;
  const sdk::SnapshotRequest& request_;
  sdk::Reply& reply_;
  const Deadline deadline_;
  const GuestRef ref_;
  const std::string machine_uid_;
  const std::string machine_;
  const std::string snapname_;
  const std::string target_;
};

}  // namespace

std::string pveSnapshotName(std::string_view name) {
  if (isPveSnapname(name)) return std::string(name);
  std::string readable;
  for (char c : name) {
    if (configIdChar(c)) {
      readable += c;
    } else if (!readable.empty() && readable.back() != '-') {
      readable += '-';
    }
  }
  if (readable.empty() || !asciiLetter(readable.front())) readable.insert(0, "s");
  readable.resize(std::min(readable.size(), kReadableLength));
  while (readable.size() > 1 && readable.back() == '-') readable.pop_back();
  return readable + "-" + sdk::sha256Hex(name).substr(0, kHashLength);
}

Status SnapshotManager::handle(const sdk::Call& call, const sdk::SnapshotRequest& request,
                               sdk::Reply& reply) {
  if (request.provider_id.empty()) {
    return {Code::kFailedPrecondition, "MachineNotProvisioned",
            machineName(request) +
                " has no VM yet (no spec.providerID); it can be snapshotted once provisioned"};
  }
  std::optional<GuestRef> ref = parseProviderId(request.provider_id);
  if (!ref) {
    return {Code::kInvalidArgument, "InvalidProviderID",
            "spec.providerID '" + request.provider_id + "' of " + machineName(request) +
                " is not proxmox://<node>/<vmid>"};
  }
  std::string uid = json::stringOr(request.machine, "metadata.uid");
  if (uid.empty()) {
    return {Code::kInvalidArgument, "MissingField",
            "snapshot request: machine.metadata.uid is required (it names the machine's VM)"};
  }
  SnapshotCall snapshot_call(client_, call, request, reply, std::move(*ref), std::move(uid));
  return withPveErrors(snapshot_call.what(), [&]() -> Status { return snapshot_call.run(); });
}

}  // namespace banlieue::proxmox
