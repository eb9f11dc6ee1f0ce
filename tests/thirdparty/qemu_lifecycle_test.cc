// The qemu example plugin (built against the SDK installed alone) against real QEMU: create,
// power off and on, resize by restart, a provider restart that adopts the running machine,
// delete, and refusals of bad input. Every assertion is on what the backend shows: /proc, the
// machine's files, and the test's own QMP session (qmp_probe.h), never only the plugin's word.
#include <fcntl.h>
#include <gtest/gtest.h>
#include <signal.h>
#include <unistd.h>

#include <cstdio>
#include <filesystem>
#include <fstream>
#include <set>
#include <string>
#include <thread>

#include "tests/thirdparty/plugin_driver.h"
#include "tests/thirdparty/qmp_probe.h"

namespace banlieue::qemu::testing {
namespace {

namespace fs = std::filesystem;
namespace json = sdk::json;

rapidjson::Document parsed(const std::string& text) {
  return json::parse(text.empty() ? "{}" : text, "reply");
}

std::string configFor(const std::string& endpoint) {
  return R"({"provider":{"apiVersion":"banlieue.io/v1alpha1","kind":"Provider",)"
         R"("metadata":{"name":"qemu","namespace":"default"},)"
         R"("spec":{"providerClassRef":{"name":"qemu"},"connection":{"endpoint":")" +
         endpoint + R"("}}}})";
}

struct Shape {
  int cpus = 1;
  int memory_mib = 128;
  std::string power = "PoweredOn";
  std::string extra;  // more spec fields, each starting with a comma
};

std::string machine(const std::string& uid, const Shape& s) {
  return R"({"apiVersion":"infrastructure.qemu.example.com/v1alpha1","kind":"QemuMachine",)"
         R"("metadata":{"name":"vm-)" +
         uid + R"(","namespace":"default","uid":")" + uid +
         R"(","generation":1},"spec":{"providerRef":{"name":"qemu"},"cpus":)" +
         std::to_string(s.cpus) + R"(,"memoryMiB":)" + std::to_string(s.memory_mib) +
         R"(,"desiredPowerState":")" + s.power + "\"" + s.extra + "}}";
}

// accel=auto, unless BANLIEUE_QEMU_TEST_ACCEL names one (tcg: the run of a host without KVM).
std::string testAccel() {
  const char* accel = std::getenv("BANLIEUE_QEMU_TEST_ACCEL");
  return accel != nullptr && *accel != '\0' ? accel : "auto";
}

bool kvmUsable() {
  int fd = open("/dev/kvm", O_RDWR | O_CLOEXEC);
  if (fd < 0) return false;
  close(fd);
  return true;
}

// The accelerator the plugin must choose: auto takes KVM when /dev/kvm opens read-write.
std::string expectedAccel() {
  if (testAccel() != "auto") return testAccel();
  return kvmUsable() ? "kvm" : "tcg";
}

std::string hostName() {
  char host[256] = "localhost";
  gethostname(host, sizeof(host) - 1);
  return host;
}

// The condition of `type` in a reply's status, as "Status/Reason".
std::string condition(const rapidjson::Document& reply, const std::string& type) {
  const auto* conditions = json::find(&reply, "status.conditions");
  if (conditions == nullptr || !conditions->IsArray()) return "none";
  for (const auto& c : conditions->GetArray()) {
    if (json::stringOr(&c, "type") == type) {
      return json::stringOr(&c, "status") + "/" + json::stringOr(&c, "reason");
    }
  }
  return "none";
}

class QemuLifecycle : public ::testing::Test {
 protected:
  void SetUp() override {
    ASSERT_TRUE(fs::exists("/usr/bin/qemu-system-x86_64") && fs::exists("/usr/bin/qemu-img"))
        << "these tests need QEMU: install qemu-system-x86 and qemu-utils";
    char dir[] = "/tmp/banlieue-qemu-XXXXXX";
    ASSERT_NE(mkdtemp(dir), nullptr);
    state_ = dir;
    ASSERT_TRUE(createInstance(driver_).ok());
  }

  // No QEMU of this test outlives it, whatever failed: each names the state directory.
  void TearDown() override {
    driver_.destroy();
    for (pid_t pid : processesWith(state_.string() + "/")) kill(pid, SIGKILL);
    std::error_code ec;
    fs::remove_all(state_, ec);
  }

  CallOutcome createInstance(Driver& driver, const std::string& options = "") {
    return driver.create(configFor(endpoint() + options));
  }

  std::string endpoint() const {
    return "qemu://" + state_.string() + "?accel=" + testAccel() + "&powerdownSeconds=1";
  }
  fs::path dirOf(const std::string& uid) const { return state_ / "machines" / uid; }
  std::vector<pid_t> qemusOf(const std::string& uid) const {
    return processesWith(dirOf(uid).string() + "/");
  }
  std::string qmp(const std::string& uid, const std::string& command) const {
    return qmpQuery((dirOf(uid) / "qmp.sock").string(), command);
  }
  std::string runState(const std::string& uid) const {
    auto reply = parsed(qmp(uid, "query-status"));
    return json::stringOr(&reply, "status");
  }
  int64_t cpus(const std::string& uid) const {
    return static_cast<int64_t>(parsed(qmp(uid, "query-cpus-fast")).Size());
  }
  int64_t memoryMiB(const std::string& uid) const {
    auto reply = parsed(qmp(uid, "query-memory-size-summary"));
    return json::integer(&reply, "base-memory").value_or(0) >> 20;
  }

  fs::path state_;
  Driver driver_;
};

TEST_F(QemuLifecycle, ReconcileStartsOneRunningQemuAndReportsIt) {
  const std::string uid = "0b6d3c1e-0001-4000-8000-000000000001";
  auto out = driver_.drive("reconcile", machine(uid, {}), uid);
  ASSERT_TRUE(out.ok()) << out.codeName() << " " << out.reason << ": " << out.message;
  auto reply = parsed(out.body);
  EXPECT_EQ(json::stringOr(&reply, "status.providerID"), "qemu://" + hostName() + "/" + uid);
  EXPECT_TRUE(json::boolean(&reply, "status.initialization.provisioned"));
  EXPECT_EQ(json::stringOr(&reply, "status.observedPowerState"), "PoweredOn");
  EXPECT_EQ(json::stringOr(&reply, "status.accel"), expectedAccel());
  EXPECT_EQ(condition(reply, "HardwareApplied"), "True/Applied");
  EXPECT_FALSE(json::boolean(&reply, "settled")) << "the pass that made and started it";

  auto qemus = qemusOf(uid);
  ASSERT_EQ(qemus.size(), 1u);
  std::ifstream pidfile(dirOf(uid) / "qemu.pid");
  pid_t recorded = 0;
  pidfile >> recorded;
  EXPECT_EQ(qemus.front(), recorded);
  const std::string cmdline = commandLine(qemus.front());
  EXPECT_NE(cmdline.find("-nic none"), std::string::npos) << cmdline;
  EXPECT_NE(cmdline.find("-display none"), std::string::npos) << cmdline;
  EXPECT_NE(cmdline.find("accel=" + expectedAccel()), std::string::npos) << cmdline;
  EXPECT_EQ(runState(uid), "running");
  EXPECT_EQ(cpus(uid), 1);
  EXPECT_EQ(memoryMiB(uid), 128);

  // Idempotent: the same machine, not a second QEMU; found as the spec asks, the reply says it
  // is settled (docs/adr/0054).
  auto again = driver_.drive("reconcile", machine(uid, {}), uid);
  ASSERT_TRUE(again.ok()) << again.message;
  EXPECT_EQ(qemusOf(uid), qemus);
  auto settled = parsed(again.body);
  EXPECT_TRUE(json::boolean(&settled, "settled")) << again.body;
}

TEST_F(QemuLifecycle, PowerOffQuitsQemuAndKeepsTheDiskPowerOnStartsItAgain) {
  const std::string uid = "0b6d3c1e-0002-4000-8000-000000000002";
  ASSERT_TRUE(driver_.drive("reconcile", machine(uid, {}), uid).ok());
  const auto first = qemusOf(uid);
  ASSERT_EQ(first.size(), 1u);

  Shape off;
  off.power = "PoweredOff";
  std::vector<CallOutcome> trail;
  auto out = driver_.drive("reconcile", machine(uid, off), uid, &trail);
  ASSERT_TRUE(out.ok()) << out.codeName() << " " << out.message;
  // The guest was asked first (ACPI powerdown), then quit after the grace: IN_PROGRESS meanwhile.
  EXPECT_EQ(trail.front().code, BANLIEUE_IN_PROGRESS);
  auto reply = parsed(out.body);
  EXPECT_EQ(json::stringOr(&reply, "status.observedPowerState"), "PoweredOff");
  EXPECT_TRUE(qemusOf(uid).empty());
  EXPECT_FALSE(fs::exists(dirOf(uid) / "qmp.sock"));
  EXPECT_FALSE(fs::exists(dirOf(uid) / "qemu.pid"));
  EXPECT_TRUE(fs::exists(dirOf(uid) / "root.qcow2"));
  EXPECT_FALSE(json::boolean(&reply, "settled")) << "the pass that ended the stop";
  // Off stays off, and the pass that finds it so is settled.
  auto still = driver_.drive("reconcile", machine(uid, off), uid);
  ASSERT_TRUE(still.ok()) << still.message;
  EXPECT_TRUE(qemusOf(uid).empty());
  auto still_reply = parsed(still.body);
  EXPECT_TRUE(json::boolean(&still_reply, "settled")) << still.body;

  auto on = driver_.drive("reconcile", machine(uid, {}), uid);
  ASSERT_TRUE(on.ok()) << on.message;
  const auto second = qemusOf(uid);
  ASSERT_EQ(second.size(), 1u);
  EXPECT_NE(second, first);
  EXPECT_EQ(runState(uid), "running");
}

TEST_F(QemuLifecycle, SuspendPausesTheGuestAndPowerOnContinuesIt) {
  const std::string uid = "0b6d3c1e-0003-4000-8000-000000000003";
  ASSERT_TRUE(driver_.drive("reconcile", machine(uid, {}), uid).ok());
  const auto running = qemusOf(uid);
  Shape suspended;
  suspended.power = "Suspended";
  auto out = driver_.drive("reconcile", machine(uid, suspended), uid);
  ASSERT_TRUE(out.ok()) << out.message;
  auto reply = parsed(out.body);
  EXPECT_EQ(json::stringOr(&reply, "status.observedPowerState"), "Suspended");
  EXPECT_EQ(runState(uid), "paused");
  ASSERT_TRUE(driver_.drive("reconcile", machine(uid, {}), uid).ok());
  EXPECT_EQ(runState(uid), "running");
  EXPECT_EQ(qemusOf(uid), running);  // the same process throughout
}

TEST_F(QemuLifecycle, ResizeIsAppliedByARestartAndSeenThroughQmp) {
  const std::string uid = "0b6d3c1e-0004-4000-8000-000000000004";
  ASSERT_TRUE(driver_.drive("reconcile", machine(uid, {}), uid).ok());
  const auto before = qemusOf(uid);
  ASSERT_EQ(cpus(uid), 1);
  ASSERT_EQ(memoryMiB(uid), 128);

  Shape bigger;
  bigger.cpus = 2;
  bigger.memory_mib = 256;
  std::vector<CallOutcome> trail;
  auto out = driver_.drive("reconcile", machine(uid, bigger), uid, &trail);
  ASSERT_TRUE(out.ok()) << out.codeName() << " " << out.message;
  ASSERT_EQ(trail.front().code, BANLIEUE_IN_PROGRESS);
  EXPECT_EQ(condition(parsed(trail.front().body), "HardwareApplied"), "False/RestartingToApply");
  EXPECT_EQ(condition(parsed(out.body), "HardwareApplied"), "True/Applied");
  const auto after = qemusOf(uid);
  ASSERT_EQ(after.size(), 1u);
  EXPECT_NE(after, before);
  EXPECT_EQ(cpus(uid), 2);
  EXPECT_EQ(memoryMiB(uid), 256);
}

TEST_F(QemuLifecycle, WaitForRestartKeepsTheShapeUntilARestartRequest) {
  const std::string uid = "0b6d3c1e-0005-4000-8000-000000000005";
  ASSERT_TRUE(driver_.drive("reconcile", machine(uid, {}), uid).ok());
  const auto before = qemusOf(uid);
  Shape waiting;
  waiting.cpus = 2;
  waiting.extra = R"(,"resizePolicy":"WaitForRestart")";
  auto out = driver_.drive("reconcile", machine(uid, waiting), uid);
  ASSERT_TRUE(out.ok()) << out.message;
  EXPECT_EQ(condition(parsed(out.body), "HardwareApplied"), "False/RestartRequired");
  auto held = parsed(out.body);
  EXPECT_FALSE(json::boolean(&held, "settled")) << "a shape that waits for a restart";
  EXPECT_EQ(qemusOf(uid), before);
  EXPECT_EQ(cpus(uid), 1);

  // A restart request applies it, and is answered once.
  waiting.extra += R"(,"restartRequestedAt":"2026-12-05T10:00:00Z")";
  std::vector<CallOutcome> trail;
  out = driver_.drive("reconcile", machine(uid, waiting), uid, &trail);
  ASSERT_TRUE(out.ok()) << out.message;
  auto first = parsed(trail.front().body);
  EXPECT_EQ(json::stringOr(&first, "status.lastRestart.outcome"), "Restarted");
  EXPECT_EQ(json::stringOr(&first, "status.lastRestart.requestedAt"), "2026-12-05T10:00:00Z");
  EXPECT_NE(qemusOf(uid), before);
  EXPECT_EQ(cpus(uid), 2);
}

TEST_F(QemuLifecycle, ARestartedProviderAdoptsTheRunningMachine) {
  const std::string uid = "0b6d3c1e-0006-4000-8000-000000000006";
  ASSERT_TRUE(driver_.drive("reconcile", machine(uid, {}), uid).ok());
  const auto running = qemusOf(uid);
  ASSERT_EQ(running.size(), 1u);
  driver_.destroy();  // the provider goes; its QEMU stays

  // A new provider process, knowing only the state directory.
  const fs::path config = state_ / "config.json";
  const fs::path object = state_ / "object.json";
  std::ofstream(config) << configFor(endpoint());
  std::ofstream(object) << machine(uid, {});
  const char* helper = std::getenv("BANLIEUE_QEMU_PLUGIN_CALL");
  ASSERT_NE(helper, nullptr);
  auto run = [&](const std::string& slot) {
    std::string command = std::string(helper) + " " + config.string() + " " + slot + " " +
                          object.string() + " " + uid + " 2>&1";
    FILE* pipe = popen(command.c_str(), "r");
    std::string output;
    char buf[4096];
    while (pipe != nullptr && fgets(buf, sizeof(buf), pipe) != nullptr) output += buf;
    int status = pipe == nullptr ? -1 : pclose(pipe);
    return std::make_pair(status, output);
  };
  auto [status, output] = run("reconcile");
  ASSERT_EQ(status, 0) << output;
  EXPECT_EQ(output.rfind("OK ", 0), 0u) << output;
  EXPECT_NE(output.find("qemu://" + hostName() + "/" + uid), std::string::npos) << output;
  EXPECT_EQ(qemusOf(uid), running) << "the new provider started a second QEMU";

  auto [deleted, words] = run("finalize");
  ASSERT_EQ(deleted, 0) << words;
  EXPECT_TRUE(qemusOf(uid).empty());
  EXPECT_FALSE(fs::exists(dirOf(uid)));
}

TEST_F(QemuLifecycle, DeleteLeavesNoProcessDiskSocketOrPidfile) {
  const std::string uid = "0b6d3c1e-0007-4000-8000-000000000007";
  Shape two_disks;
  two_disks.extra = R"(,"disks":[{"name":"root","sizeGiB":1},{"name":"data","sizeGiB":2}])";
  ASSERT_TRUE(driver_.drive("reconcile", machine(uid, two_disks), uid).ok());
  ASSERT_EQ(qemusOf(uid).size(), 1u);
  ASSERT_TRUE(fs::exists(dirOf(uid) / "data.qcow2"));
  auto block = qmp(uid, "query-block");
  EXPECT_NE(block.find(R"("device":"data")"), std::string::npos) << block;

  auto out = driver_.drive("finalize", machine(uid, two_disks), uid);
  ASSERT_TRUE(out.ok()) << out.codeName() << " " << out.message;
  EXPECT_TRUE(qemusOf(uid).empty());
  EXPECT_FALSE(fs::exists(dirOf(uid)));
  EXPECT_TRUE(fs::is_empty(state_ / "machines")) << "a lock file or a machine was left";
  // Deleting what is gone is done.
  EXPECT_TRUE(driver_.drive("finalize", machine(uid, two_disks), uid).ok());
}

TEST_F(QemuLifecycle, AKilledQemuIsStartedAgainAndAHalfMadeCreateIsRedone) {
  const std::string uid = "0b6d3c1e-0008-4000-8000-000000000008";
  ASSERT_TRUE(driver_.drive("reconcile", machine(uid, {}), uid).ok());
  const auto killed = qemusOf(uid);
  ASSERT_EQ(killed.size(), 1u);
  kill(killed.front(), SIGKILL);
  // Once it is gone (a condition with a deadline), its pidfile and socket remain.
  const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(10);
  while (!qemusOf(uid).empty() && std::chrono::steady_clock::now() < deadline) {
    std::this_thread::sleep_for(std::chrono::milliseconds(20));
  }
  ASSERT_TRUE(qemusOf(uid).empty());
  ASSERT_TRUE(fs::exists(dirOf(uid) / "qemu.pid"));
  auto out = driver_.drive("reconcile", machine(uid, {}), uid);
  ASSERT_TRUE(out.ok()) << out.message;
  auto now = qemusOf(uid);
  ASSERT_EQ(now.size(), 1u);
  EXPECT_NE(now, killed);
  EXPECT_EQ(runState(uid), "running");

  // A create that died after a disk file but before the record: completed, not duplicated.
  const std::string half = "0b6d3c1e-0009-4000-8000-000000000009";
  fs::create_directories(dirOf(half));
  std::ofstream(dirOf(half) / "root.qcow2") << "half-written";
  out = driver_.drive("reconcile", machine(half, {}), half);
  ASSERT_TRUE(out.ok()) << out.message;
  EXPECT_EQ(qemusOf(half).size(), 1u);
  EXPECT_EQ(runState(half), "running");
  std::ifstream disk(dirOf(half) / "root.qcow2", std::ios::binary);
  char magic[4] = {};
  disk.read(magic, 4);
  EXPECT_EQ(std::string(magic, 4), "QFI\xfb") << "the half-written disk was not made again";
}

TEST_F(QemuLifecycle, ALostPidfileDoesNotStartASecondQemu) {
  const std::string uid = "0b6d3c1e-000c-4000-8000-00000000000c";
  ASSERT_TRUE(driver_.drive("reconcile", machine(uid, {}), uid).ok());
  const auto running = qemusOf(uid);
  ASSERT_EQ(running.size(), 1u);
  fs::remove(dirOf(uid) / "qemu.pid");
  auto out = driver_.drive("reconcile", machine(uid, {}), uid);
  ASSERT_TRUE(out.ok()) << out.codeName() << " " << out.message;
  EXPECT_EQ(qemusOf(uid), running);
  // And a delete still finds it.
  ASSERT_TRUE(driver_.drive("finalize", machine(uid, {}), uid).ok());
  EXPECT_TRUE(qemusOf(uid).empty());
  EXPECT_FALSE(fs::exists(dirOf(uid)));
}

TEST_F(QemuLifecycle, ABaseImageBecomesTheBackingFileOfTheRootDisk) {
  const std::string uid = "0b6d3c1e-000a-4000-8000-00000000000a";
  fs::create_directories(state_ / "images");
  const fs::path base = state_ / "images" / "base.qcow2";
  ASSERT_EQ(std::system(("/usr/bin/qemu-img create -q -f qcow2 " + base.string() + " 64M").c_str()),
            0);
  Shape from_image;
  from_image.extra = R"(,"image":{"name":"base","ref":"base.qcow2"})";
  auto out = driver_.drive("reconcile", machine(uid, from_image), uid);
  ASSERT_TRUE(out.ok()) << out.message;
  FILE* info = popen(
      ("/usr/bin/qemu-img info --output=json -U " + (dirOf(uid) / "root.qcow2").string()).c_str(),
      "r");
  ASSERT_NE(info, nullptr);
  std::string text;
  char buf[4096];
  while (fgets(buf, sizeof(buf), info) != nullptr) text += buf;
  pclose(info);
  auto doc = parsed(text);
  EXPECT_EQ(json::stringOr(&doc, "backing-filename"), base.string()) << text;
  EXPECT_EQ(runState(uid), "running");
}

TEST_F(QemuLifecycle, BadInputIsRefusedWithAReason) {
  // A base image that is not there: NOT_FOUND (it may still be imported), nothing started.
  const std::string uid = "0b6d3c1e-000b-4000-8000-00000000000b";
  Shape missing;
  missing.extra = R"(,"image":{"name":"gone","ref":"gone.qcow2"})";
  auto out = driver_.drive("reconcile", machine(uid, missing), uid);
  EXPECT_EQ(out.codeName(), "NOT_FOUND");
  EXPECT_EQ(out.reason, "BaseImageNotFound");
  EXPECT_NE(out.message.find("gone.qcow2"), std::string::npos) << out.message;
  EXPECT_TRUE(qemusOf(uid).empty());

  Shape zero;
  zero.cpus = 0;
  out = driver_.drive("reconcile", machine(uid, zero), uid);
  EXPECT_EQ(out.codeName(), "INVALID_ARGUMENT");
  EXPECT_EQ(out.reason, "InvalidSpec");
  EXPECT_NE(out.message.find("spec.cpus"), std::string::npos) << out.message;

  // The Provider's endpoint: an unusable state directory, a missing binary, a bad option.
  Driver other;
  std::ofstream(state_ / "a-file") << "not a directory";
  out = other.create(configFor("qemu://" + (state_ / "a-file" / "state").string()));
  EXPECT_EQ(out.codeName(), "UNAVAILABLE");
  EXPECT_EQ(out.reason, "StateDirUnreachable");
  out = createInstance(other, "&qemu=/nonexistent/qemu-system-x86_64");
  EXPECT_EQ(out.codeName(), "FAILED_PRECONDITION");
  EXPECT_EQ(out.reason, "QemuNotFound");
  out = other.create(configFor("qemu://" + state_.string() + "?accel=xen"));
  EXPECT_EQ(out.codeName(), "INVALID_ARGUMENT");
  EXPECT_EQ(out.reason, "InvalidEndpoint");
  out = other.create(configFor("qemu://" + state_.string() + "?accel=kvm"));
  if (kvmUsable()) {
    EXPECT_TRUE(out.ok()) << out.message;
  } else {
    EXPECT_EQ(out.reason, "AccelUnavailable");
  }
}

}  // namespace
}  // namespace banlieue::qemu::testing
