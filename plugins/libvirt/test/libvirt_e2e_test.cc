// End to end against a real libvirtd that this test starts (tests/support/private_libvirtd.h): a
// TLS listener on loopback with certificates it generates, a directory pool, an isolated
// network, and QEMU domains under TCG. The plugin is driven through the C ABI over qemu+tls://;
// the results are checked with virsh and the libvirt API on the daemon's own unix socket.
// Labels: e2e;libvirt;day2 (a resize of the running domain and snapshots, issue #20).
//
// The daemon is the test's own, in namespaces of its own: it runs beside any other libvirtd
// (the machine's, `scripts/dev.sh --real`'s) and dies with the test, its domains included. It
// skips only when not run as root (allowed by tests/skip_allowlist.txt); a missing package
// fails it.
#include "plugins/libvirt/test/plugin_harness.h"
#include "tests/support/private_libvirtd.h"

#include <libvirt/libvirt.h>
#include <libvirt/virterror.h>
#include <netinet/in.h>
#include <signal.h>
#include <sys/socket.h>
#include <unistd.h>

#include <filesystem>
#include <fstream>
#include <sstream>
#include <thread>

namespace banlieue::libvirt::testing {
namespace {

namespace fs = std::filesystem;
using std::chrono::milliseconds;
using std::chrono::seconds;

struct CommandResult {
  int status;
  std::string output;
};

CommandResult run(const std::string& command) {
  CommandResult r{-1, {}};
  FILE* p = popen((command + " 2>&1").c_str(), "r");
  if (p == nullptr) return r;
  char buf[4096];
  size_t n;
  while ((n = fread(buf, 1, sizeof(buf), p)) > 0) r.output.append(buf, n);
  r.status = pclose(p);
  return r;
}

std::string slurp(const fs::path& p) {
  std::ifstream in(p);
  return {std::istreambuf_iterator<char>(in), std::istreambuf_iterator<char>()};
}

bool portOpen(const std::string& uri) {
  // qemu+tls://127.0.0.1:<port>/system
  const auto colon = uri.rfind(':');
  const int port = std::stoi(uri.substr(colon + 1));
  int fd = ::socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
  sockaddr_in addr{};
  addr.sin_family = AF_INET;
  addr.sin_port = htons(static_cast<uint16_t>(port));
  addr.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  bool ok = ::connect(fd, reinterpret_cast<sockaddr*>(&addr), sizeof(addr)) == 0;
  ::close(fd);
  return ok;
}

class LibvirtDaemonE2E : public ::testing::Test {
 protected:
  void SetUp() override {
    if (auto why = banlieue::testing::PrivateLibvirtd::unavailableReason(); !why.empty()) {
      GTEST_SKIP() << why;
    }
    // scripts/setup.sh installs them; a missing one is a failure, not a skip.
    for (const char* tool : {"/usr/bin/virsh", "/usr/bin/qemu-system-x86_64", "/usr/bin/openssl"}) {
      ASSERT_TRUE(fs::exists(tool)) << tool << " is missing: run scripts/setup.sh";
    }
    ASSERT_FALSE(pluginPath().empty());
    // qemu runs as libvirt-qemu and must traverse into the pool directory.
    char tmpl[] = "/tmp/bnl-lv-e2e-XXXXXX";
    ASSERT_NE(::mkdtemp(tmpl), nullptr);
    dir_ = tmpl;
    fs::permissions(dir_, fs::perms::owner_all | fs::perms::group_exec | fs::perms::others_exec);
    suffix_ = std::to_string(::getpid() % 100000);
    pool_ = "bnl-e2e-" + suffix_;
    // Its own daemon (tests/support/private_libvirtd.h): found by its own socket, beside any
    // other libvirtd, and gone with this test, its QEMU processes included.
    std::string error;
    ASSERT_TRUE(daemon_.start(dir_, pool_, &error, {.tls_address = "127.0.0.1"})) << error;
    fs::permissions(daemon_.poolPath(),
                    fs::perms::owner_all | fs::perms::group_exec | fs::perms::others_exec);
    // An isolated network (a bridge with no addresses: no dnsmasq, no firewall rules).
    network_ = "bnl-e2e-" + suffix_;
    std::string net_xml =
        "<network><name>" + network_ + "</name><bridge name='bnle2e" + suffix_ + "'/></network>";
    virNetworkPtr n = virNetworkCreateXML(daemon_.connection(), net_xml.c_str());
    ASSERT_NE(n, nullptr) << virGetLastErrorMessage();
    virNetworkFree(n);
  }

  void TearDown() override {
    harness_.destroy();
    if (dir_.empty()) return;  // skipped before anything was started
    // The bridge lives in the machine's network namespace: removed before the daemon goes.
    if (daemon_.connection() != nullptr) {
      if (virNetworkPtr n = virNetworkLookupByName(daemon_.connection(), network_.c_str())) {
        virNetworkDestroy(n);
        virNetworkFree(n);
      }
    }
    if (HasFailure()) std::cerr << "libvirtd log:\n" << daemon_.log() << "\n";
    daemon_.stop();  // its domains with it
    std::error_code ec;
    fs::remove_all(dir_, ec);
  }

  std::string virsh(const std::string& args) {
    return run("virsh -q -c '" + daemon_.uri() + "' " + args).output;
  }

  ProviderSpec provider(const fs::path& pki) {
    ProviderSpec spec;
    spec.endpoint = daemon_.tlsUri();
    spec.storage_classes = R"([{"name":"local","target":{"pool":")" + pool_ + R"("}}])";
    spec.network_classes = R"([{"name":"lan","target":{"network":")" + network_ + R"("}}])";
    spec.annotations = R"({"libvirt.banlieue.io/domain-type":"qemu"})";  // TCG: see env notes
    spec.credentials = R"({"tls.crt":)" + quote(slurp(pki / "clientcert.pem")) + R"(,"tls.key":)" +
                       quote(slurp(pki / "clientkey.pem")) + R"(,"ca.crt":)" +
                       quote(slurp(pki / "cacert.pem")) + "}";
    return spec;
  }
  ProviderSpec provider() { return provider(daemon_.pkiPath()); }

  // base.qcow2 in the test's pool: an empty 64 MiB disk, no OS (the firmware finds nothing to
  // boot), for the tests that need a running domain and no image import.
  void createEmptyBaseVolume() {
    virStoragePoolPtr pool = virStoragePoolLookupByName(daemon_.connection(), pool_.c_str());
    ASSERT_NE(pool, nullptr) << virGetLastErrorMessage();
    virStorageVolPtr base =
        virStorageVolCreateXML(pool,
                               "<volume><name>base.qcow2</name><capacity unit='MiB'>64</capacity>"
                               "<target><format type='qcow2'/></target></volume>",
                               0);
    virStoragePoolFree(pool);
    ASSERT_NE(base, nullptr) << virGetLastErrorMessage();
    virStorageVolFree(base);
  }

  fs::path dir_;
  std::string suffix_;
  std::string pool_;
  std::string network_;
  banlieue::testing::PrivateLibvirtd daemon_;
  Harness harness_;
};

TEST_F(LibvirtDaemonE2E, ImportCreatePowerCycleRestartDaemonAndDeleteLeavesNothing) {
  auto t0 = std::chrono::steady_clock::now();
  // A client certificate outside the daemon's allow-list is refused.
  auto refused = harness_.create(provider(daemon_.intruderPkiPath()));
  EXPECT_NE(refused.code, BANLIEUE_OK) << describeOutcome(refused);

  auto created = harness_.create(provider());
  ASSERT_TRUE(created.ok()) << describeOutcome(created) << "\n" << daemon_.log();

  auto fd = harness_.introspect(provider());
  ASSERT_TRUE(fd.ok()) << describeOutcome(fd);
  auto fd_doc = json::parse(fd.body, "introspect");
  const auto& attrs = fd_doc["failureDomains"][0]["attributes"];
  ASSERT_EQ(attrs["availableStorageClasses"].Size(), 1u) << fd.body;
  ASSERT_EQ(attrs["availableNetworkClasses"].Size(), 1u) << fd.body;

  // Import a small image over the TLS stream.
  fs::path artifact = dir_ / "tiny.raw";
  {
    std::string bytes(size_t{4} << 20, '\0');
    for (size_t i = 0; i < bytes.size(); i += 4096) bytes[i] = static_cast<char>(i / 4096);
    std::ofstream(artifact, std::ios::binary) << bytes;
  }
  std::string sha = run("sha256sum " + artifact.string() + " | cut -c1-64").output.substr(0, 64);
  std::string import_request =
      R"({"image":{"apiVersion":"banlieue.io/v1alpha1","kind":"VMImage","metadata":{"name":"tiny","uid":"img"},
        "spec":{"sources":[{"providerClass":"libvirt","kind":"Url","ref":"","checksum":"sha256:)" +
      sha + R"("}]},"status":{"buildArtifact":{"kind":"cloudImage","phase":"Ready"}}},
        "artifact":{"path":)" +
      quote(artifact.string()) + R"(,"format":"raw","sha256":")" + sha +
      R"(","sizeBytes":4194304},"failureDomain":"host")";
  auto imported = harness_.importUntilDone(import_request, "img");
  ASSERT_TRUE(imported.ok()) << describeOutcome(imported);
  auto import_doc = json::parse(imported.body, "import");
  std::string image_volume = json::stringOr(&import_doc, "status.resolvedRef");
  EXPECT_EQ(image_volume, "tiny-" + sha.substr(0, 12) + ".raw");
  // Byte-identical in the pool (read back by virsh, not by the plugin).
  fs::path back = dir_ / "back.raw";
  virsh("vol-download --pool " + pool_ + " " + image_volume + " " + back.string());
  EXPECT_EQ(run("sha256sum " + back.string() + " | cut -c1-64").output.substr(0, 64), sha);

  MachineOptions m;
  m.name = "e2e-" + suffix_;
  const std::string domain = "default-" + m.name;
  m.uid = "e2e00000-0000-4000-8000-0000000" +
          std::string(5 - std::min<size_t>(5, suffix_.size()), '0') + suffix_;
  m.pool = pool_;
  m.boot_volume = image_volume;
  m.root_gib = 1;
  m.network = R"([{"name":"nic0","source":{"kind":"network","name":")" + network_ + R"("}}])";
  m.user_data = "#cloud-config\nhostname: e2e\n";
  m.annotations = R"({"libvirt.banlieue.io/shutdown-timeout-seconds":"3"})";

  auto r = harness_.reconcile(m);
  ASSERT_TRUE(r.ok()) << describeOutcome(r) << "\n" << daemon_.log();
  EXPECT_NE(virsh("list --name").find(domain), std::string::npos) << virsh("list --all");
  std::string vols = virsh("vol-list " + pool_);
  EXPECT_NE(vols.find(domain + "-root.qcow2"), std::string::npos) << vols;
  EXPECT_NE(vols.find(domain + "-cidata.iso"), std::string::npos) << vols;
  // The seed is a real ISO 9660 volume labelled cidata, as blkid (util-linux) reads it.
  fs::path seed = dir_ / "seed.iso";
  virsh("vol-download --pool " + pool_ + " " + domain + "-cidata.iso " + seed.string());
  CommandResult label = run("blkid -p -o value -s LABEL " + seed.string());
  EXPECT_EQ(label.output, "cidata\n") << label.output;
  EXPECT_NE(virsh("dumpxml " + domain).find("<source network='" + network_ + "'"),
            std::string::npos);

  // Power off: the guest has no OS to honour ACPI, so the graceful shutdown times out (3 s)
  // and the plugin destroys the domain.
  m.power = "PoweredOff";
  auto off = harness_.reconcile(m);
  for (int i = 0; i < 100 && off.code == BANLIEUE_IN_PROGRESS; ++i) {
    auto body = json::parse(off.body, "reply");
    std::string token = json::stringOr(&body, "operation.token");
    ASSERT_FALSE(token.empty()) << off.body;
    std::this_thread::sleep_for(milliseconds(std::max<int64_t>(100, off.requeue_after_ms)));
    off = harness_.reconcile(m, token);
  }
  ASSERT_TRUE(off.ok()) << describeOutcome(off);
  EXPECT_EQ(virsh("domstate " + domain).rfind("shut off", 0), 0u) << virsh("domstate " + domain);

  m.power = "PoweredOn";
  ASSERT_TRUE(harness_.reconcile(m).ok());
  EXPECT_NE(virsh("list --name").find(domain), std::string::npos);

  // The daemon restarts under the plugin: the next call reconnects by itself.
  std::string error;
  ASSERT_TRUE(daemon_.restart(&error)) << error;
  ASSERT_TRUE(portOpen(daemon_.tlsUri()));
  auto after = harness_.reconcile(m);
  ASSERT_TRUE(after.ok()) << describeOutcome(after);
  auto after_doc = json::parse(after.body, "reply");
  EXPECT_EQ(json::stringOr(&after_doc, "status.observedPowerState"), "PoweredOn");

  // Day 2 (issue #20): a resize of the running machine reaches the running QEMU. The data
  // disk is hot-plugged; the vCPUs and memory need a restart, which the plugin drives (the
  // graceful shutdown times out as above, then the domain starts on the new definition).
  m.vcpus = 2;
  m.memory_mib = 256;
  m.extra_disks = R"(,{"name":"logs","sizeGiB":1})";
  auto resized = harness_.reconcile(m);
  for (int i = 0; i < 100 && resized.code == BANLIEUE_IN_PROGRESS; ++i) {
    auto body = json::parse(resized.body, "reply");
    EXPECT_NE(resized.body.find("RestartingToApply"), std::string::npos) << resized.body;
    std::this_thread::sleep_for(milliseconds(std::max<int64_t>(100, resized.requeue_after_ms)));
    resized = harness_.reconcile(m, json::stringOr(&body, "operation.token"));
  }
  ASSERT_TRUE(resized.ok()) << describeOutcome(resized) << "\n" << daemon_.log();
  auto resized_doc = json::parse(resized.body, "reply");
  // The plugin's conditions by type: HardwareApplied says the resize is applied (GuestReady
  // rides along since the machine reports the guest agent).
  const rapidjson::Value* hardware = nullptr;
  if (const auto* conditions = json::find(&resized_doc, "status.conditions");
      conditions != nullptr && conditions->IsArray()) {
    for (const auto& c : conditions->GetArray()) {
      if (json::stringOr(&c, "type") == "HardwareApplied") hardware = &c;
    }
  }
  ASSERT_NE(hardware, nullptr) << resized.body;
  EXPECT_EQ(json::stringOr(hardware, "status"), "True") << resized.body;
  std::string live = virsh("dumpxml " + domain);
  EXPECT_EQ(virsh("domstate " + domain).rfind("running", 0), 0u) << virsh("domstate " + domain);
  EXPECT_NE(live.find(">2</vcpu>"), std::string::npos) << live;
  EXPECT_NE(live.find("<memory unit='KiB'>262144</memory>"), std::string::npos) << live;
  EXPECT_NE(live.find("volume='" + domain + "-disk-logs.qcow2'"), std::string::npos) << live;
  EXPECT_EQ(virsh("list --all --name").find(domain), virsh("list --all --name").rfind(domain))
      << "one domain, not two: " << virsh("list --all");

  auto fin = harness_.finalize(m);
  ASSERT_TRUE(fin.ok()) << describeOutcome(fin);
  EXPECT_EQ(virsh("list --all --name").find(domain), std::string::npos) << virsh("list --all");
  vols = virsh("vol-list " + pool_);
  EXPECT_EQ(vols.find(domain), std::string::npos) << "volumes left: " << vols;
  EXPECT_NE(vols.find(image_volume), std::string::npos);  // the image stays for other machines
  auto pool_files = [&] {
    std::vector<std::string> names;
    for (const auto& e : fs::directory_iterator(daemon_.poolPath()))
      names.push_back(e.path().filename());
    return names;
  };
  EXPECT_EQ(pool_files(), std::vector<std::string>{image_volume});
  std::cerr
      << "e2e wall time: "
      << std::chrono::duration_cast<milliseconds>(std::chrono::steady_clock::now() - t0).count()
      << " ms\n";
}

// ABI 1.2 snapshots on QEMU: a snapshot is an internal snapshot in the machine's qcow2 root
// volume (qemu-img lists it), with the memory when the domain runs; a revert puts back the
// guest's disk content (a pattern written after the snapshot is gone) and its power state;
// delete removes it from the volume; and a machine that still has snapshots is deleted like
// any other, leaving no volume, no domain and no snapshot for a machine made again.
TEST_F(LibvirtDaemonE2E, SnapshotsAreInternalQcow2SnapshotsThatRevertTheDisk) {
  auto t0 = std::chrono::steady_clock::now();
  auto created = harness_.create(provider());
  ASSERT_TRUE(created.ok()) << describeOutcome(created) << "\n" << daemon_.log();
  ASSERT_NO_FATAL_FAILURE(createEmptyBaseVolume());
  MachineOptions m;
  m.name = "snap-" + suffix_;
  const std::string domain = "default-" + m.name;
  m.uid = "5a500000-0000-4000-8000-0000000" +
          std::string(5 - std::min<size_t>(5, suffix_.size()), '0') + suffix_;
  m.pool = pool_;
  m.boot_volume = "base.qcow2";
  m.root_gib = 1;
  m.network = R"([{"name":"nic0","source":{"kind":"network","name":")" + network_ + R"("}}])";
  m.user_data = "#cloud-config\nhostname: snap\n";  // a seed ISO beside the disk, as usual
  // No OS in the guest to honour ACPI: power off destroys the domain at once.
  m.annotations = R"({"libvirt.banlieue.io/shutdown-timeout-seconds":"0"})";
  auto r = harness_.reconcile(m);
  ASSERT_TRUE(r.ok()) << describeOutcome(r) << "\n" << daemon_.log();
  auto doc = json::parse(r.body, "reply");
  m.provider_id = json::stringOr(&doc, "status.providerID");
  const std::string root = (daemon_.poolPath() / (domain + "-root.qcow2")).string();
  auto snapshot = [&](const std::string& action, const std::string& name,
                      const std::string& ref = "", bool memory = false) {
    return harness_.snapshot(m, snapshotRequest(m, action, name, ref, memory));
  };
  auto internalSnapshots = [&] { return run("qemu-img snapshot -U -l " + root).output; };
  // qemu-io on the stopped domain's root volume: the guest's view of its disk.
  auto guestDisk = [&](const std::string& command) {
    return run("qemu-io -f qcow2 -c '" + command + "' " + root).output;
  };

  auto running = snapshot("create", "running-state");
  ASSERT_EQ(running.code, BANLIEUE_OK) << describeOutcome(running) << "\n" << daemon_.log();
  doc = json::parse(running.body, "reply");
  EXPECT_TRUE(json::boolean(&doc, "status.memory", false)) << running.body;
  const std::string running_ref = json::stringOr(&doc, "status.snapshotRef");
  EXPECT_NE(internalSnapshots().find("running-state"), std::string::npos) << internalSnapshots();
  auto again = snapshot("create", "running-state");
  ASSERT_EQ(again.code, BANLIEUE_OK) << describeOutcome(again);
  EXPECT_NE(again.body.find(quote(running_ref)), std::string::npos) << again.body;
  EXPECT_EQ(virsh("snapshot-list --name " + domain), "running-state\n");

  m.power = "PoweredOff";
  ASSERT_TRUE(harness_.reconcile(m).ok());
  ASSERT_EQ(virsh("domstate " + domain).rfind("shut off", 0), 0u) << virsh("domstate " + domain);
  auto stopped = snapshot("create", "stopped-state");
  ASSERT_EQ(stopped.code, BANLIEUE_OK) << describeOutcome(stopped);
  doc = json::parse(stopped.body, "reply");
  EXPECT_FALSE(json::boolean(&doc, "status.memory", true)) << stopped.body;
  auto memory = snapshot("create", "stopped-with-memory", "", /*memory=*/true);
  EXPECT_EQ(memory.code, BANLIEUE_UNIMPLEMENTED) << describeOutcome(memory);
  EXPECT_EQ(memory.reason, "NotSupportedByBackend");

  // Written after both snapshots; the disk-only revert takes it away and leaves the domain off.
  EXPECT_NE(guestDisk("write -P 0x5a 0 64k").find("wrote 65536/65536"), std::string::npos);
  ASSERT_NE(guestDisk("read -P 0x5a 0 64k").find("read 65536/65536"), std::string::npos);
  auto reverted = snapshot("revert", "stopped-state", "stopped-state");
  ASSERT_EQ(reverted.code, BANLIEUE_OK) << describeOutcome(reverted) << "\n" << daemon_.log();
  EXPECT_NE(guestDisk("read -P 0x5a 0 64k").find("Pattern verification failed"), std::string::npos)
      << "the write after the snapshot survived the revert";
  EXPECT_EQ(virsh("domstate " + domain).rfind("shut off", 0), 0u) << virsh("domstate " + domain);

  // The checkpoint taken running comes back running, with its memory.
  EXPECT_NE(guestDisk("write -P 0x5a 0 64k").find("wrote 65536/65536"), std::string::npos);
  reverted = snapshot("revert", "running-state", running_ref);
  ASSERT_EQ(reverted.code, BANLIEUE_OK) << describeOutcome(reverted) << "\n" << daemon_.log();
  EXPECT_EQ(virsh("domstate " + domain).rfind("running", 0), 0u) << virsh("domstate " + domain);
  EXPECT_EQ(virsh("snapshot-current --name " + domain).rfind("running-state", 0), 0u);
  auto list = snapshot("list", "");
  ASSERT_EQ(list.code, BANLIEUE_OK) << describeOutcome(list);
  doc = json::parse(list.body, "reply");
  const auto* entries = json::find(&doc, "status.snapshots");
  ASSERT_TRUE(entries != nullptr && entries->IsArray() && entries->Size() == 2) << list.body;

  ASSERT_EQ(snapshot("delete", "running-state", running_ref).code, BANLIEUE_OK);
  EXPECT_EQ(internalSnapshots().find("running-state"), std::string::npos) << internalSnapshots();
  EXPECT_EQ(snapshot("delete", "running-state", running_ref).code, BANLIEUE_OK);
  EXPECT_EQ(virsh("snapshot-list --name " + domain), "stopped-state\n");

  // Deleted with a snapshot left: nothing of the machine remains.
  auto fin = harness_.finalize(m);
  ASSERT_TRUE(fin.ok()) << describeOutcome(fin) << "\n" << daemon_.log();
  EXPECT_EQ(virsh("list --all --name").find(domain), std::string::npos) << virsh("list --all");
  std::vector<std::string> pool_files;
  for (const auto& e : fs::directory_iterator(daemon_.poolPath()))
    pool_files.push_back(e.path().filename());
  EXPECT_EQ(pool_files, std::vector<std::string>{"base.qcow2"});
  m.power = "PoweredOn";
  m.provider_id.clear();
  ASSERT_TRUE(harness_.reconcile(m).ok());
  m.provider_id = "libvirt://" + m.uid;
  list = snapshot("list", "");
  ASSERT_EQ(list.code, BANLIEUE_OK) << describeOutcome(list);
  EXPECT_NE(list.body.find(R"("snapshots":[])"), std::string::npos) << list.body;
  EXPECT_TRUE(harness_.finalize(m).ok());

  // UEFI firmware keeps its variables in a pflash file outside the volumes, and libvirt takes
  // no internal snapshot of such a domain: refused as the contract says, naming the cause.
  MachineOptions efi = m;
  efi.name = "efi-" + suffix_;
  efi.uid = "5a500000-0000-4000-8000-00000001" +
            std::string(4 - std::min<size_t>(4, suffix_.size()), '0') + suffix_.substr(0, 4);
  efi.firmware = "efi";
  efi.provider_id.clear();
  r = harness_.reconcile(efi);
  ASSERT_TRUE(r.ok()) << describeOutcome(r) << "\n" << daemon_.log();
  doc = json::parse(r.body, "reply");
  efi.provider_id = json::stringOr(&doc, "status.providerID");
  auto refused = harness_.snapshot(efi, snapshotRequest(efi, "create", "uefi"));
  EXPECT_EQ(refused.code, BANLIEUE_UNIMPLEMENTED) << describeOutcome(refused);
  EXPECT_EQ(refused.reason, "NotSupportedByBackend");
  EXPECT_NE(refused.message.find("pflash"), std::string::npos) << refused.message;
  EXPECT_EQ(virsh("snapshot-list --name default-" + efi.name), "");
  EXPECT_TRUE(harness_.finalize(efi).ok());
  std::cerr
      << "e2e snapshot wall time: "
      << std::chrono::duration_cast<milliseconds>(std::chrono::steady_clock::now() - t0).count()
      << " ms\n";
}

// The serial console (ABI 1.3) of a running domain, through the plugin over qemu+tls: the
// stream is the real daemon's, so what the guest's firmware writes to its serial port comes out
// of it (SeaBIOS, reset while the console is open); a read waits as long as it is
// told; a second session is refused while the first is open; a stopped domain has no console.
TEST_F(LibvirtDaemonE2E, TheSerialConsoleStreamsTheGuestsSerialPort) {
  auto created = harness_.create(provider());
  ASSERT_TRUE(created.ok()) << describeOutcome(created) << "\n" << daemon_.log();
  ASSERT_NO_FATAL_FAILURE(createEmptyBaseVolume());
  MachineOptions m;
  m.name = "console-" + suffix_;
  const std::string domain = "default-" + m.name;
  m.uid = "c0250000-0000-4000-8000-0000000" +
          std::string(5 - std::min<size_t>(5, suffix_.size()), '0') + suffix_;
  m.pool = pool_;
  m.boot_volume = "base.qcow2";
  m.root_gib = 1;
  m.network = R"([{"name":"nic0","source":{"kind":"network","name":")" + network_ + R"("}}])";
  m.annotations = R"({"libvirt.banlieue.io/shutdown-timeout-seconds":"0"})";
  auto r = harness_.reconcile(m);
  ASSERT_TRUE(r.ok()) << describeOutcome(r) << "\n" << daemon_.log();
  auto doc = json::parse(r.body, "reply");
  m.provider_id = json::stringOr(&doc, "status.providerID");
  ASSERT_EQ(virsh("domstate " + domain).rfind("running", 0), 0u) << virsh("domstate " + domain);

  banlieue_console* console = nullptr;
  auto opened = harness_.openConsole(m, &console);
  ASSERT_EQ(opened.code, BANLIEUE_OK) << describeOutcome(opened) << "\n" << daemon_.log();
  ASSERT_NE(console, nullptr);
  EXPECT_NE(opened.body.find("serial console of domain " + domain), std::string::npos)
      << opened.body;
  auto& client = harness_.client();

  // One session at a time: a second is refused while this one is open.
  banlieue_console* second = nullptr;
  auto busy = harness_.openConsole(m, &second);
  EXPECT_EQ(busy.code, BANLIEUE_FAILED_PRECONDITION) << describeOutcome(busy);
  EXPECT_EQ(busy.reason, "ConsoleBusy");
  EXPECT_EQ(second, nullptr);

  // A short read waits as long as asked, never much longer.
  char buf[4096];
  size_t n = 0;
  auto started = std::chrono::steady_clock::now();
  EXPECT_EQ(client.consoleRead(console, buf, sizeof buf, 200, &n), BANLIEUE_OK);
  EXPECT_LT(std::chrono::steady_clock::now() - started, seconds(5));
  std::string output(buf, n);
  // Typing reaches the guest's serial port (taken by the stream, at least one byte a call).
  size_t taken = 0;
  EXPECT_EQ(client.consoleWrite(console, "\r", &taken), BANLIEUE_OK);
  EXPECT_EQ(taken, 1u);
  // The firmware's output, read back through the stream (TCG: give it time). What the guest
  // wrote before the console was opened is gone (a pty with no reader drops it), so the
  // domain is reset now, and SeaBIOS starts over on the open stream.
  EXPECT_EQ(virsh("reset " + domain).find("error"), std::string::npos);
  auto until = std::chrono::steady_clock::now() + seconds(60);
  while (output.find("SeaBIOS") == std::string::npos && std::chrono::steady_clock::now() < until) {
    banlieue_status code = client.consoleRead(console, buf, sizeof buf, 1000, &n);
    ASSERT_EQ(code, BANLIEUE_OK) << "the stream ended early; so far: " << output;
    output.append(buf, n);
  }
  EXPECT_NE(output.find("SeaBIOS"), std::string::npos)
      << "nothing of the firmware came through the console; read: " << output;

  // The domain stops: the stream ends, and a stopped domain has no console to open.
  m.power = "PoweredOff";
  ASSERT_TRUE(harness_.reconcile(m).ok());
  banlieue_status code = BANLIEUE_OK;
  until = std::chrono::steady_clock::now() + seconds(30);
  while (code == BANLIEUE_OK && std::chrono::steady_clock::now() < until) {
    code = client.consoleRead(console, buf, sizeof buf, 500, &n);
  }
  EXPECT_EQ(code, BANLIEUE_OUT_OF_RANGE) << "the stream did not end with the domain";
  client.consoleClose(console);
  auto off = harness_.openConsole(m, &second);
  EXPECT_EQ(off.code, BANLIEUE_FAILED_PRECONDITION) << describeOutcome(off);
  EXPECT_EQ(off.reason, "MachineNotRunning");
  EXPECT_TRUE(harness_.finalize(m).ok());
}

// Per-pool imports (docs/adr/0053): the plugin publishes the Provider's pools as the failure
// domain's importTargets; import_image and delete_image with a target work on that pool only
// and refuse (import) or skip with a warning (delete) a pool the Provider does not declare;
// without a target both work on every declared pool, as for a host from before.
TEST_F(LibvirtDaemonE2E, ImportsAndDeletesWithATargetTouchThatPoolOnly) {
  const std::string second = "bnl-e2e2-" + suffix_;
  const std::string missing = "bnl-e2e-missing-" + suffix_;
  fs::path second_path = dir_ / "pool2";
  fs::create_directories(second_path);
  std::string pool_xml = "<pool type='dir'><name>" + second + "</name><target><path>" +
                         second_path.string() + "</path></target></pool>";
  virStoragePoolPtr created_pool =
      virStoragePoolCreateXML(daemon_.connection(), pool_xml.c_str(), 0);
  ASSERT_NE(created_pool, nullptr) << virGetLastErrorMessage();
  virStoragePoolFree(created_pool);
  ProviderSpec spec = provider();
  spec.storage_classes = R"([{"name":"local","target":{"pool":")" + pool_ +
                         R"("}},{"name":"second","target":{"pool":")" + second +
                         R"("}},{"name":"again","target":{"pool":")" + pool_ +
                         R"("}},{"name":"gone","target":{"pool":")" + missing + R"("}}])";
  auto created = harness_.create(spec);
  ASSERT_TRUE(created.ok()) << describeOutcome(created) << "\n" << daemon_.log();

  // The distinct pools of the storage classes, in order, whether or not they exist (an import
  // into a missing one says so on its own row).
  auto fd = harness_.introspect(spec);
  ASSERT_TRUE(fd.ok()) << describeOutcome(fd);
  auto fd_doc = json::parse(fd.body, "introspect");
  const auto* targets = json::find(&fd_doc["failureDomains"][0], "attributes.importTargets");
  ASSERT_NE(targets, nullptr) << fd.body;
  std::vector<std::string> published;
  for (const auto& t : targets->GetArray()) published.emplace_back(t.GetString());
  EXPECT_EQ(published, (std::vector<std::string>{pool_, second, missing}));

  fs::path artifact = dir_ / "tiny.raw";
  {
    std::string bytes(size_t{1} << 20, '\0');
    for (size_t i = 0; i < bytes.size(); i += 4096) bytes[i] = static_cast<char>(i / 4096 + 1);
    std::ofstream(artifact, std::ios::binary) << bytes;
  }
  std::string sha = run("sha256sum " + artifact.string() + " | cut -c1-64").output.substr(0, 64);
  const std::string image =
      R"({"apiVersion":"banlieue.io/v1alpha1","kind":"VMImage","metadata":{"name":"tiny","uid":"img"},
        "spec":{"sources":[{"providerClass":"libvirt","kind":"Url","ref":""}]},
        "status":{"buildArtifact":{"kind":"cloudImage","phase":"Ready"}}})";
  auto import_request = [&](const std::string& target) {
    std::string r = R"({"image":)" + image + R"(,"artifact":{"path":)" + quote(artifact.string()) +
                    R"(,"format":"raw","sha256":")" + sha +
                    R"(","sizeBytes":1048576},"failureDomain":"host")";
    if (!target.empty()) r += R"(,"target":)" + quote(target);
    return r;
  };
  auto delete_request = [&](const std::string& target) {
    std::string r = R"({"image":)" + image + R"(,"failureDomain":"host")";
    if (!target.empty()) r += R"(,"target":)" + quote(target);
    return r + "}";
  };
  const std::string volume = "tiny-" + sha.substr(0, 12) + ".raw";
  auto has = [&](const std::string& pool) {
    return virsh("vol-list " + pool).find(volume) != std::string::npos;
  };

  // Into the second pool only.
  auto imported = harness_.importUntilDone(import_request(second), "img");
  ASSERT_TRUE(imported.ok()) << describeOutcome(imported);
  auto doc = json::parse(imported.body, "import");
  EXPECT_EQ(json::stringOr(&doc, "status.resolvedRef"), volume);
  const auto* volumes = json::find(&doc, "status.volumes");
  ASSERT_NE(volumes, nullptr) << imported.body;
  ASSERT_EQ(volumes->Size(), 1u) << imported.body;
  EXPECT_EQ(json::stringOr(&(*volumes)[0], "pool"), second);
  EXPECT_TRUE(has(second));
  EXPECT_FALSE(has(pool_)) << virsh("vol-list " + pool_);
  fs::path back = dir_ / "back.raw";
  virsh("vol-download --pool " + second + " " + volume + " " + back.string());
  EXPECT_EQ(run("sha256sum " + back.string() + " | cut -c1-64").output.substr(0, 64), sha);

  // A pool the Provider does not declare, or one it declares that is not there: refused, and
  // nothing is written anywhere.
  auto undeclared = harness_.importUntilDone(import_request("default"), "img");
  EXPECT_EQ(undeclared.code, BANLIEUE_FAILED_PRECONDITION) << describeOutcome(undeclared);
  EXPECT_EQ(undeclared.reason, "PoolNotDeclared");
  EXPECT_NE(undeclared.message.find("'default'"), std::string::npos) << undeclared.message;
  EXPECT_NE(undeclared.message.find(second), std::string::npos) << undeclared.message;
  auto absent = harness_.importUntilDone(import_request(missing), "img");
  EXPECT_EQ(absent.code, BANLIEUE_FAILED_PRECONDITION) << describeOutcome(absent);
  EXPECT_EQ(absent.reason, "PoolNotFound");
  EXPECT_FALSE(has(pool_));

  // Into the first pool too; then deleting from the second leaves the first's.
  ASSERT_TRUE(harness_.importUntilDone(import_request(pool_), "img").ok());
  EXPECT_TRUE(has(pool_));
  auto deleted = harness_.deleteImage(delete_request(second), "img");
  ASSERT_TRUE(deleted.ok()) << describeOutcome(deleted);
  EXPECT_FALSE(has(second)) << virsh("vol-list " + second);
  EXPECT_TRUE(has(pool_)) << virsh("vol-list " + pool_);

  // A pool no longer declared: OK with a Warning, so a VMImage's deletion never waits on it,
  // and nothing is touched.
  harness_.host().clearRecords();
  auto stale = harness_.deleteImage(delete_request("old-pool"), "img");
  EXPECT_TRUE(stale.ok()) << describeOutcome(stale);
  bool warned = false;
  for (const auto& e : harness_.host().events()) {
    if (e.type == BANLIEUE_EVENT_WARNING && e.reason == "PoolNotDeclared" &&
        e.message.find("old-pool") != std::string::npos) {
      warned = true;
    }
  }
  EXPECT_TRUE(warned) << "no PoolNotDeclared Warning event";
  EXPECT_TRUE(has(pool_));

  // Without a target, as a host from before per-target imports asks: every declared pool.
  harness_.host().clearRecords();
  auto everywhere = harness_.importUntilDone(import_request(""), "img");
  EXPECT_EQ(everywhere.code, BANLIEUE_FAILED_PRECONDITION) << "the missing pool is declared too";
  EXPECT_EQ(everywhere.reason, "PoolNotFound");
  spec.storage_classes = R"([{"name":"local","target":{"pool":")" + pool_ +
                         R"("}},{"name":"second","target":{"pool":")" + second + R"("}}])";
  ASSERT_TRUE(harness_.create(spec).ok());
  auto both = harness_.importUntilDone(import_request(""), "img");
  ASSERT_TRUE(both.ok()) << describeOutcome(both);
  EXPECT_TRUE(has(pool_));
  EXPECT_TRUE(has(second));
  ASSERT_TRUE(harness_.deleteImage(delete_request(""), "img").ok());
  EXPECT_FALSE(has(pool_));
  EXPECT_FALSE(has(second));
}

}  // namespace
}  // namespace banlieue::libvirt::testing
