#include "machine.h"

#include <banlieue/sdk/json.h>
#include <banlieue/sdk/status.h>
#include <banlieue/sdk/time.h>
#include <fcntl.h>
#include <signal.h>
#include <sys/file.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <ctime>
#include <fstream>
#include <thread>
#include <vector>

#include "qmp_client.h"

namespace qemu_provider {
namespace {

namespace fs = std::filesystem;
namespace json = banlieue::sdk::json;
using banlieue::sdk::Code;
using banlieue::sdk::Error;

constexpr int64_t kGiB = int64_t{1} << 30;
constexpr int64_t kMiB = int64_t{1} << 20;

void writeAtomically(const fs::path& path, const std::string& content) {
  fs::path tmp = path;
  tmp += ".tmp";
  {
    std::ofstream out(tmp, std::ios::trunc);
    out << content;
    if (!out) throw Error(Code::kUnavailable, "WriteFailed", "cannot write " + tmp.string());
  }
  fs::rename(tmp, path);
}

// A qemu-img run that must succeed: its own words otherwise.
std::string qemuImg(const BackendConfig& config, std::vector<std::string> args, Deadline deadline,
                    const std::string& what) {
  args.insert(args.begin(), config.qemu_img.string());
  ProcessResult result = runProcess(args, deadline);
  if (result.timed_out) {
    throw Error(Code::kDeadlineExceeded, "QemuImgTimeout",
                what + ": qemu-img did not finish in time");
  }
  if (result.exit_code != 0) {
    throw Error(Code::kFailedPrecondition, "DiskCreateFailed", what + ": " + result.output);
  }
  return result.output;
}

}  // namespace

Machine::Machine(const BackendConfig& config, const std::string& id) : config_(config), id_(id) {
  if (id.empty() || id.size() > 64 ||
      id.find_first_not_of("abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789-") !=
          std::string::npos) {
    throw Error(Code::kInvalidArgument, "InvalidUid",
                "metadata.uid must be 1..64 characters of A-Z, a-z, 0-9 and '-', got '" + id + "'");
  }
  dir_ = config.state_dir / "machines" / id;
}

Machine::Lock::Lock(const Machine& machine, Deadline deadline) : path_(machine.lockPath()) {
  while (true) {
    fd_ = open(path_.c_str(), O_RDWR | O_CREAT | O_CLOEXEC, 0600);
    if (fd_ < 0) {
      throw Error(Code::kUnavailable, "StateDirUnreachable",
                  "cannot open " + path_.string() + ": " + std::strerror(errno));
    }
    // flock has no timeout: try until the deadline (another provider's call is bounded too).
    while (flock(fd_, LOCK_EX | LOCK_NB) != 0) {
      if (std::chrono::steady_clock::now() >= deadline) {
        close(fd_);
        fd_ = -1;
        throw Error(Code::kAborted, "MachineBusy",
                    "another call holds machine " + machine.id_ + "; trying again");
      }
      std::this_thread::sleep_for(std::chrono::milliseconds(20));
    }
    // A finalize removes the lock file while it holds it: a lock taken on a file that is no
    // longer the one at the path locks nothing, so it is taken again.
    struct stat held {};
    struct stat named {};
    if (fstat(fd_, &held) == 0 && stat(path_.c_str(), &named) == 0 && held.st_ino == named.st_ino &&
        held.st_dev == named.st_dev) {
      return;
    }
    close(fd_);
    fd_ = -1;
  }
}

void Machine::Lock::release(bool remove_file) {
  if (fd_ < 0) return;
  if (remove_file) unlink(path_.c_str());
  close(fd_);  // releases the flock
  fd_ = -1;
}

Machine::Lock::~Lock() {
  release(false);
}

bool Machine::exists() const {
  return fs::exists(dir_ / "machine.json");
}

void Machine::makeDisk(const DiskSpec& d, const fs::path& base, Deadline deadline) const {
  fs::path tmp = disk(d);
  tmp += ".tmp";
  std::vector<std::string> args = {"create", "-q", "-f", "qcow2"};
  int64_t size = d.size_gib * kGiB;
  if (!base.empty()) {
    auto info = json::parse(qemuImg(config_, {"info", "--output=json", base.string()}, deadline,
                                    "base image " + base.string()),
                            "qemu-img info");
    const std::string format = json::stringOr(&info, "format", "raw");
    // An overlay is never smaller than its base: that would cut the guest's filesystem.
    size = std::max(size, json::integer(&info, "virtual-size").value_or(0));
    args.insert(args.end(), {"-b", base.string(), "-F", format});
  }
  args.insert(args.end(), {tmp.string(), std::to_string(size)});
  qemuImg(config_, args, deadline, "disk " + d.name);
  fs::rename(tmp, disk(d));
}

void Machine::create(const MachineSpec& spec, const std::string& owner, Deadline deadline) {
  fs::path base;
  if (!spec.image_ref.empty()) {
    base = config_.state_dir / "images" / spec.image_ref;
    if (!fs::is_regular_file(base)) {
      throw Error(
          Code::kNotFound, "BaseImageNotFound",
          "spec.image.ref: no base image " + base.string() + " (put the image there or import it)");
    }
  }
  if (fs::exists(dir_)) {
    // Half made by a call that did not finish: no QEMU ever ran on it (start needs the
    // record), so its disks are taken away and made again.
    if (!remove(deadline)) {
      throw Error(Code::kUnavailable, "CleanupPending", "removing a half-made machine " + id_);
    }
  }
  fs::create_directories(dir_);
  makeDisk(spec.disks.front(), base, deadline);
  for (size_t i = 1; i < spec.disks.size(); ++i) makeDisk(spec.disks[i], {}, deadline);
  rapidjson::Document record(rapidjson::kObjectType);
  auto& a = record.GetAllocator();
  record.AddMember("id", json::stringValue(id_, a), a);
  record.AddMember("owner", json::stringValue(owner, a), a);
  record.AddMember("image", json::stringValue(spec.image_ref, a), a);
  record.AddMember("createdAt", json::stringValue(banlieue::sdk::utcNow(), a), a);
  writeAtomically(dir_ / "machine.json", json::serialize(record));
}

void Machine::createMissingDisks(const MachineSpec& spec, Deadline deadline) {
  for (size_t i = 1; i < spec.disks.size(); ++i) {
    if (!fs::exists(disk(spec.disks[i]))) makeDisk(spec.disks[i], {}, deadline);
  }
}

std::optional<pid_t> Machine::runningPid() const {
  auto pid = readPidFile(dir_ / "qemu.pid");
  if (pid && processMatches(*pid, qmpSocket().string())) return pid;
  // A QEMU whose pidfile is gone (removed by hand, or a crash while QEMU wrote it) still
  // names its socket in its command line: it is this machine's, and no second one may start.
  auto found = processesWith(qmpSocket().string());
  if (!found.empty()) return found.front();
  return std::nullopt;
}

void Machine::forgetProcess() const {
  std::error_code ec;
  fs::remove(dir_ / "qemu.pid", ec);
  fs::remove(qmpSocket(), ec);
  fs::remove(dir_ / "powerdown", ec);
}

void Machine::start(const MachineSpec& spec, const std::string& accel,
                    const std::string& guest_name, Deadline deadline) {
  forgetProcess();
  std::vector<std::string> args = {config_.qemu.string()};
  auto add = [&args](std::initializer_list<std::string> more) { args.insert(args.end(), more); };
  add({"-name", "guest=" + guest_name});
  add({"-machine", "q35,accel=" + accel});
  add({"-smp", std::to_string(spec.cpus)});
  add({"-m", std::to_string(spec.memory_mib)});
  // Nothing QEMU would add by itself: no NIC (a machine reaches no address at all), no
  // display, no monitor on a terminal the daemon no longer has.
  add({"-nodefaults", "-no-user-config"});
  add({"-nic", "none"});
  add({"-display", "none"});
  add({"-qmp", "unix:" + qmpSocket().string() + ",server=on,wait=off"});
  add({"-pidfile", (dir_ / "qemu.pid").string()});
  add({"-daemonize"});
  for (const auto& d : spec.disks) {
    add({"-drive", "if=virtio,format=qcow2,id=" + d.name + ",file=" + disk(d).string()});
  }
  ProcessResult result = runProcess(args, deadline);
  if (result.timed_out) {
    throw Error(Code::kDeadlineExceeded, "QemuStartTimeout",
                "QEMU of machine " + id_ + " did not start in time");
  }
  if (result.exit_code != 0 || !runningPid()) {
    throw Error(Code::kFailedPrecondition, "QemuStartFailed",
                "QEMU of machine " + id_ + " (accel " + accel + ") did not start: " +
                    (result.output.empty() ? "exit code " + std::to_string(result.exit_code)
                                           : result.output));
  }
}

bool Machine::stopGracefully(std::chrono::seconds grace, Deadline deadline) {
  if (!runningPid()) {
    forgetProcess();
    return true;
  }
  // When the powerdown was sent, in wall-clock milliseconds: another process may read it.
  const fs::path marker = dir_ / "powerdown";
  auto now_ms = [] {
    return std::chrono::duration_cast<std::chrono::milliseconds>(
               std::chrono::system_clock::now().time_since_epoch())
        .count();
  };
  int64_t sent = 0;
  if (std::ifstream in(marker); !(in >> sent)) {
    QmpClient qmp(qmpSocket(), deadline);
    qmp.execute("system_powerdown");
    sent = now_ms();
    writeAtomically(marker, std::to_string(sent));
  }
  // A guest that powers off ends QEMU (no -no-shutdown); one that ignores ACPI is quit.
  if (now_ms() - sent < std::chrono::milliseconds(grace).count()) return false;
  return stopNow(deadline);
}

bool Machine::stopNow(Deadline deadline) {
  auto pid = runningPid();
  if (pid) {
    // Leave a quarter of the time for SIGKILL when QEMU does not quit.
    auto quit_deadline =
        std::chrono::steady_clock::now() + (deadline - std::chrono::steady_clock::now()) * 3 / 4;
    try {
      QmpClient qmp(qmpSocket(), quit_deadline);
      qmp.quit();
    } catch (const Error&) {
      // QMP busy or gone: the signal below ends the process.
    }
    if (!waitForExit(*pid, quit_deadline) && processMatches(*pid, qmpSocket().string())) {
      kill(*pid, SIGKILL);
      if (!waitForExit(*pid, deadline)) return false;
    }
  }
  forgetProcess();
  return true;
}

bool Machine::remove(Deadline deadline) {
  if (!stopNow(deadline)) return false;
  // A QEMU whose pidfile was lost (removed by hand, a crash while it was written) still names
  // its socket in its command line.
  for (pid_t orphan : processesWith(qmpSocket().string())) {
    kill(orphan, SIGKILL);
    if (!waitForExit(orphan, deadline)) return false;
  }
  std::error_code ec;
  fs::remove_all(dir_, ec);
  if (ec) {
    throw Error(Code::kUnavailable, "DeleteFailed",
                "cannot remove " + dir_.string() + ": " + ec.message());
  }
  return true;
}

LiveShape Machine::liveShape(QmpClient& qmp) {
  LiveShape shape;
  auto cpus = qmp.execute("query-cpus-fast");
  shape.cpus = cpus.IsArray() ? cpus.Size() : 0;
  auto memory = qmp.execute("query-memory-size-summary");
  shape.memory_mib = json::integer(&memory, "base-memory").value_or(0) / kMiB;
  auto block = qmp.execute("query-block");
  if (block.IsArray()) {
    for (const auto& device : block.GetArray()) {
      std::string name = json::stringOr(&device, "device");
      if (!name.empty()) shape.disks.insert(name);
    }
  }
  return shape;
}

}  // namespace qemu_provider
