#include "plugins/libvirt/src/snapshots.h"

#include "plugins/libvirt/src/domain_xml.h"
#include "plugins/libvirt/src/libvirt_handles.h"
#include "plugins/libvirt/src/machine_domain.h"
#include "plugins/libvirt/src/machine_spec.h"

#include <banlieue/sdk/time.h>

#include <algorithm>
#include <ctime>
#include <tuple>
#include <vector>

namespace banlieue::libvirt {

namespace json = sdk::json;
using sdk::Code;
using sdk::Error;
using sdk::SnapshotRequest;
using sdk::Status;

namespace {

std::string snapshotDomainName(virDomainPtr dom) {
  const char* name = virDomainGetName(dom);
  return name != nullptr ? name : "?";
}

// The slot's contract names what a backend cannot do NotSupportedByBackend. libvirt says so
// with these codes for a snapshot the domain's configuration rules out (qemu takes no internal
// snapshot of a domain with pflash firmware or a raw disk, for example); its message, naming
// the cause, is kept. Every other failure goes through the plugin's one error table.
[[noreturn]] void raiseSnapshotFailure(const std::string& what) {
  const LibvirtError e = LibvirtError::last();
  if (e.code == VIR_ERR_NO_SUPPORT || e.code == VIR_ERR_OPERATION_UNSUPPORTED ||
      e.code == VIR_ERR_CONFIG_UNSUPPORTED) {
    throw Error(Code::kUnimplemented, "NotSupportedByBackend", what + ": " + e.message);
  }
  throw toError(e, what);
}

struct SnapshotEntry {
  std::string name;
  SnapshotFacts facts;
};

SnapshotEntry readSnapshot(virDomainSnapshotPtr snap) {
  SnapshotEntry entry;
  const char* name = virDomainSnapshotGetName(snap);
  entry.name = name != nullptr ? name : "";
  CString xml(virDomainSnapshotGetXMLDesc(snap, 0));
  if (!xml) raiseLast("reading snapshot " + entry.name);
  if (auto facts = snapshotFacts(xml.get())) entry.facts = *facts;
  return entry;
}

// snapshotRef is the snapshot's name. libvirt names are unique per domain and are the only key
// its API looks snapshots up by (virDomainSnapshotLookupByName), the domain comes with every
// request (the machine), and a snapshot banlieue did not make, which list reports, can then be
// reverted to and deleted by what list said. It also makes a create whose reply was lost
// answer the same ref, as the contract asks.
void addFacts(rapidjson::Value& object, const SnapshotEntry& entry,
              rapidjson::Document::AllocatorType& a) {
  object.AddMember("snapshotRef", json::stringValue(entry.name, a), a);
  if (entry.facts.creation_time >= 0) {
    object.AddMember("createdAt", json::stringValue(sdk::rfc3339Utc(entry.facts.creation_time), a),
                     a);
  }
  object.AddMember("memory", entry.facts.memory, a);
}

Status createSnapshot(virDomainPtr dom, const SnapshotRequest& request, sdk::Reply& reply) {
  const std::string what = "snapshot " + request.name + " of domain " + snapshotDomainName(dom);
  std::optional<Snapshot> snap = findSnapshot(dom, request.name);
  if (!snap) {
    const int active = virDomainIsActive(dom);
    if (active < 0) raiseLast("reading the state of domain " + snapshotDomainName(dom));
    if (request.memory && active == 0) {
      return {Code::kUnimplemented, "NotSupportedByBackend",
              "domain " + snapshotDomainName(dom) +
                  " is shut off: it has no memory state to snapshot (ask for a disk snapshot, "
                  "memory: false)"};
    }
    // libvirt's defaults are the only internal snapshots qemu takes: a shut-off domain's disks,
    // or a running domain's disks with its memory (qemu refuses an internal disk-only snapshot
    // of a running guest, and an external one would leave overlay files beside the machine's
    // volumes that libvirt 9 cannot revert to). So a running domain's snapshot holds its
    // memory even when not asked, and the reply's memory says so.
    const std::string xml = snapshotXml(request.name, request.description);
    virDomainSnapshotPtr made =
        virDomainSnapshotCreateXML(dom, xml.c_str(), VIR_DOMAIN_SNAPSHOT_CREATE_ATOMIC);
    if (made == nullptr) raiseSnapshotFailure("taking " + what);
    snap = Snapshot(made);
    BANLIEUE_LOG(kInfo, "took " + what);
  }
  addFacts(reply.status(), readSnapshot(snap->get()), reply.allocator());
  return Status::ok();
}

Status listSnapshots(virDomainPtr dom, sdk::Reply& reply) {
  virDomainSnapshotPtr* raw = nullptr;
  const int n = virDomainListAllSnapshots(dom, &raw, 0);
  if (n < 0) raiseLast("listing the snapshots of domain " + snapshotDomainName(dom));
  std::vector<Snapshot> snaps;
  snaps.reserve(static_cast<size_t>(n));
  for (int i = 0; i < n; ++i) snaps.emplace_back(raw[i]);
  free(raw);  // NOLINT(cppcoreguidelines-no-malloc): libvirt allocates the array with malloc

  struct Listed {
    SnapshotEntry entry;
    bool current = false;
  };
  std::vector<Listed> listed;
  for (const auto& snap : snaps) {
    const int current = virDomainSnapshotIsCurrent(snap.get(), 0);
    if (current < 0)
      raiseLast("reading whether a snapshot of " + snapshotDomainName(dom) + " is current");
    listed.push_back({readSnapshot(snap.get()), current == 1});
  }
  // Oldest first, whatever order libvirt keeps them in.
  std::sort(listed.begin(), listed.end(), [](const Listed& l, const Listed& r) {
    return std::tie(l.entry.facts.creation_time, l.entry.name) <
           std::tie(r.entry.facts.creation_time, r.entry.name);
  });
  auto& a = reply.allocator();
  rapidjson::Value out(rapidjson::kArrayType);
  for (const auto& item : listed) {
    rapidjson::Value object(rapidjson::kObjectType);
    object.AddMember("name", json::stringValue(item.entry.name, a), a);
    addFacts(object, item.entry, a);
    object.AddMember("current", item.current, a);
    out.PushBack(object, a);
  }
  reply.status().AddMember("snapshots", out, a);
  return Status::ok();
}

Status revertToSnapshot(virDomainPtr dom, const std::string& ref) {
  const std::string what = "snapshot " + ref + " of domain " + snapshotDomainName(dom);
  auto snap = findSnapshot(dom, ref);
  if (!snap) {
    return {Code::kNotFound, "SnapshotNotFound",
            "domain " + snapshotDomainName(dom) + " has no snapshot '" + ref +
                "' (deleted, or taken of an earlier domain)"};
  }
  // FORCE: the restore was asked for explicitly, and what libvirt calls risky (a new QEMU
  // process when the definition changed since the snapshot, e.g. after a resize) is what the
  // machine's next reconcile does anyway when it brings the domain back to its spec.
  if (virDomainRevertToSnapshot(snap->get(), VIR_DOMAIN_SNAPSHOT_REVERT_FORCE) != 0) {
    raiseSnapshotFailure("reverting to " + what);
  }
  BANLIEUE_LOG(kInfo, "reverted to " + what);
  return Status::ok();
}

Status deleteSnapshot(virDomainPtr dom, const std::string& ref) {
  const std::string what = "snapshot " + ref + " of domain " + snapshotDomainName(dom);
  auto snap = findSnapshot(dom, ref);
  if (!snap) return Status::ok();
  // Without flags only this snapshot goes: its children (if any) are re-parented, not deleted.
  if (virDomainSnapshotDelete(snap->get(), 0) != 0) {
    if (LibvirtError::last().isNotFound()) return Status::ok();
    raiseSnapshotFailure("deleting " + what);
  }
  BANLIEUE_LOG(kInfo, "deleted " + what);
  return Status::ok();
}

}  // namespace

Status snapshotMachine(Connection& connection, const sdk::Call& call,
                       const SnapshotRequest& request, sdk::Reply& reply) {
  using Action = SnapshotRequest::Action;
  ConnRef conn(connection.acquire(call));
  std::optional<Domain> dom =
      machineDomain(conn.get(), request.provider_id,
                    json::stringOr(request.machine, "metadata.uid"), "its snapshots");
  if (!dom) {
    // Undefining a domain removes its snapshots with it (finalize passes
    // VIR_DOMAIN_UNDEFINE_SNAPSHOTS_METADATA and deletes the volumes that held them).
    if (request.action == Action::kDelete) return Status::ok();
    return {Code::kNotFound, "MachineNotFound",
            "the domain of spec.providerID " + request.provider_id + " does not exist on " +
                connection.uri()};
  }
  if (call.cancelled()) {
    return {Code::kCancelled, "Cancelled", "the call was cancelled or ran out of time"};
  }
  // Our refs are the names (see addFacts): a revert or delete without the ref create reported
  // (its reply was lost) still finds the snapshot by the name it was taken under.
  const std::string& ref = request.snapshot_ref.empty() ? request.name : request.snapshot_ref;
  switch (request.action) {
    case Action::kCreate: return createSnapshot(dom->get(), request, reply);
    case Action::kList: return listSnapshots(dom->get(), reply);
    case Action::kRevert: return revertToSnapshot(dom->get(), ref);
    case Action::kDelete: return deleteSnapshot(dom->get(), ref);
  }
  return {Code::kInvalidArgument, "UnknownAction", "unknown snapshot action"};
}

}  // namespace banlieue::libvirt
