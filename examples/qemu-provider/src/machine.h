// One machine's files under <state>/machines/<id>/ and its QEMU process. Everything the plugin
// knows about a machine is here, on the backend, never in the plugin's memory: a provider that
// restarts finds a running machine from its pidfile (checked against /proc) and its QMP
// socket, and a create that died half-way from the missing record.
//
//   machine.json   the record, written last: the machine exists once it is there
//   <disk>.qcow2   one per spec disk; the root disk is an overlay of its base image
//   qmp.sock       QEMU's QMP socket        qemu.pid  QEMU's pidfile (QEMU holds its lock)
//   powerdown      when an ACPI powerdown was sent (a graceful stop in progress)
// and beside the directory <id>.lock, flock'ed for the duration of a call: one writer per
// machine, even across two provider processes.
#pragma once

#include <sys/types.h>

#include <chrono>
#include <filesystem>
#include <optional>
#include <set>
#include <string>

#include "backend_config.h"
#include "machine_spec.h"
#include "process.h"

namespace qemu_provider {

class QmpClient;

// What a running QEMU actually runs, as QMP reports it.
struct LiveShape {
  int64_t cpus = 0;
  int64_t memory_mib = 0;
  std::set<std::string> disks;
};

class Machine {
 public:
  // `id` names the machine's directory: the object's uid (INVALID_ARGUMENT, reason InvalidUid,
  // unless it is 1..64 characters of [A-Za-z0-9-]).
  Machine(const BackendConfig& config, const std::string& id);

  const std::string& id() const { return id_; }
  const std::filesystem::path& dir() const { return dir_; }
  std::filesystem::path qmpSocket() const { return dir_ / "qmp.sock"; }

  // Holds the machine's lock until destroyed; ABORTED, reason MachineBusy, when another call
  // (another provider process) holds it past `deadline`.
  class Lock {
   public:
    Lock(const Machine& machine, Deadline deadline);
    ~Lock();
    Lock(const Lock&) = delete;
    Lock& operator=(const Lock&) = delete;

    // Releases the lock now; with `remove_file`, once the machine is gone, its lock file goes
    // too (a waiter then locks a fresh one).
    void release(bool remove_file);

   private:
    std::filesystem::path path_;
    int fd_ = -1;
  };

  bool exists() const;  // the record is there

  // Makes the disks and then the record. What a create that died half-way left (a directory
  // without a record) is removed first, so a create is completed, never duplicated.
  // NOT_FOUND, reason BaseImageNotFound, when spec.image.ref is not in <state>/images.
  void create(const MachineSpec& spec, const std::string& owner, Deadline deadline);

  // Makes the spec's disks that do not exist yet (a disk added to the spec; attached by the
  // next start).
  void createMissingDisks(const MachineSpec& spec, Deadline deadline);

  // The QEMU running this machine, when there is one.
  std::optional<pid_t> runningPid() const;

  // Starts QEMU, daemonized, on the spec's shape. FAILED_PRECONDITION, reason
  // QemuStartFailed, with QEMU's own words when it refuses.
  void start(const MachineSpec& spec, const std::string& accel, const std::string& guest_name,
             Deadline deadline);

  // Sends an ACPI powerdown the first time; quits QEMU once `grace` has passed since. True
  // once no QEMU runs.
  bool stopGracefully(std::chrono::seconds grace, Deadline deadline);

  // Quits QEMU (QMP quit, then SIGKILL when it does not exit in time) and removes the
  // process's files. True once no QEMU runs.
  bool stopNow(Deadline deadline);

  // Stops every QEMU of this machine and removes its directory. True once all is gone.
  bool remove(Deadline deadline);

  static LiveShape liveShape(QmpClient& qmp);

 private:
  std::filesystem::path lockPath() const { return dir_.parent_path() / (id_ + ".lock"); }
  std::filesystem::path disk(const DiskSpec& d) const { return dir_ / (d.name + ".qcow2"); }
  void makeDisk(const DiskSpec& d, const std::filesystem::path& base, Deadline deadline) const;
  void forgetProcess() const;  // the files a QEMU that is gone left behind

  const BackendConfig& config_;
  std::string id_;
  std::filesystem::path dir_;
};

}  // namespace qemu_provider
