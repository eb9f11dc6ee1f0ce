// What reaches a node over SSH: image import through the ABI's import_image slot, and
// userData as a cloud-init snippet. The real plugin, the fake PVE API and a real sshd on
// loopback that receives the uploads (the fake's "local" storage directory is
// where the node's files land, so the fake reads what actually arrived over SFTP). After every
// test: no guest but templates, and no file left in the node's storage.
#include "tests/proxmox/fake_pve.h"
#include "tests/proxmox/plugin_driver.h"
#include "tests/proxmox/sshd.h"

#include <gtest/gtest.h>
#include <unistd.h>

#include <fstream>
#include <memory>
#include <random>

namespace banlieue::proxmox::testing {
namespace {

namespace json = sdk::json;

constexpr const char* kCapabilities =
    R"({"storageClasses":[{"name":"gold","target":{"storage":"local-lvm"}},)"
    R"({"name":"seed-iso","target":{"storage":"local"}}],)"
    R"("networkClasses":[{"name":"prod","target":{"bridge":"vmbr1"}}]})";

std::string sshCredentials(const Sshd& sshd, const std::string& known_hosts) {
  return R"(,"sshPrivateKey":")" + jsonEscape(sshd.clientKey()) + R"(","sshKnownHosts":")" +
         jsonEscape(known_hosts) + R"(","sshUser":")" + sshd.user() + R"(","sshPort":")" +
         std::to_string(sshd.port()) + R"(")";
}

std::string digestOf(const std::string& tool, const std::string& path) {
  std::string out = run(tool + " " + path);
  return out.substr(0, out.find(' '));
}

class ProxmoxImportTest : public ::testing::Test {
 protected:
  void SetUp() override {
    fake_ = std::make_unique<FakePve>();
    sshd_ = std::make_unique<Sshd>();
    driver_ = std::make_unique<Driver>();
    CallOutcome created = driver_->create(fake_->instanceConfig(
        FakePve::kSecret, kCapabilities, true, sshCredentials(*sshd_, sshd_->knownHosts())));
    ASSERT_TRUE(created.ok()) << created.reason << ": " << created.message;
    // 3 MiB and a bit of random bytes: more than one SFTP block, never the same twice.
    char path[] = "/tmp/banlieue-image-XXXXXX";
    int fd = mkstemp(path);
    ASSERT_GE(fd, 0);
    close(fd);
    artifact_ = path;
    std::mt19937 random(std::random_device{}());
    std::string bytes((size_t{3} << 20) + 4321, '\0');
    for (auto& c : bytes) c = static_cast<char>(random());
    std::ofstream(artifact_, std::ios::binary) << bytes;
    sha256_ = digestOf("sha256sum", artifact_);
    sha512_ = digestOf("sha512sum", artifact_);
  }
  void TearDown() override {
    driver_.reset();
    auto state = fake_->state();
    EXPECT_EQ(fake_->guestCount(), 0) << json::serialize(state);
    EXPECT_EQ(state["files"].Size(), 0u) << "left on the node: " << json::serialize(state["files"]);
    std::remove(artifact_.c_str());
  }

  std::string request(const std::string& node = "pve1", const std::string& checksum = {},
                      const std::string& sha256 = {}) const {
    return R"({"image":{"apiVersion":"banlieue.io/v1alpha1","kind":"VMImage",)"
           R"("metadata":{"name":"noble","uid":"c0ffee00-0000-4000-8000-000000000001"},)"
           R"("spec":{"sources":[{"providerClass":"proxmox","kind":"Url",)"
           R"("ref":"https://cloud-images.example/noble.img","checksum":")" +
           (checksum.empty() ? "sha512:" + sha512_ : checksum) + R"("}]}},"artifact":{"path":")" +
           artifact_ + R"(","format":"qcow2","sha256":")" + (sha256.empty() ? sha256_ : sha256) +
           R"(","sizeBytes":)" + std::to_string((size_t{3} << 20) + 4321) +
           R"(},"failureDomain":")" + node + R"("})";
  }

  const rapidjson::Value* templateNamed(const rapidjson::Document& state,
                                        const std::string& name) const {
    for (const auto& vm : state["vms"].GetArray()) {
      if (vm["template"].GetInt() == 1 && json::stringOr(&vm, "name") == name) return &vm;
    }
    return nullptr;
  }

  std::unique_ptr<FakePve> fake_;
  std::unique_ptr<Sshd> sshd_;
  std::unique_ptr<Driver> driver_;
  std::string artifact_;
  std::string sha256_;
  std::string sha512_;
};

TEST_F(ProxmoxImportTest, ACheckedImageBecomesATemplateThatMachinesClone) {
  CallOutcome out = driver_->importImage(request());
  ASSERT_TRUE(out.ok()) << out.reason << ": " << out.message;
  auto reply = json::parse(out.body, "reply");
  const auto& zones = reply["status"]["zones"];
  ASSERT_EQ(zones.Size(), 1u) << out.body;
  EXPECT_STREQ(zones[0]["name"].GetString(), "pve1");
  EXPECT_TRUE(zones[0]["ready"].GetBool());
  const std::string vmid = zones[0]["resolvedRef"].GetString();
  EXPECT_FALSE(reply.HasMember("operation")) << "a finished import leaves no token";

  // What PVE holds: a template whose disk was imported from exactly the artifact's bytes.
  auto state = fake_->state();
  const std::string name = "noble-" + sha256_.substr(0, 12);
  const auto* tmpl = templateNamed(state, name);
  ASSERT_NE(tmpl, nullptr) << json::serialize(state);
  EXPECT_EQ(std::to_string((*tmpl)["vmid"].GetInt()), vmid);
  EXPECT_STREQ((*tmpl)["node"].GetString(), "pve1");
  const auto& imported = (*tmpl)["imported"]["scsi0"];
  EXPECT_EQ(imported["sha256"].GetString(), sha256_);
  EXPECT_EQ(imported["bytes"].GetInt64(), static_cast<int64_t>((size_t{3} << 20) + 4321));
  EXPECT_STREQ(imported["from"].GetString(), ("local:import/" + name + ".qcow2").c_str());
  EXPECT_EQ(std::string((*tmpl)["config"]["scsi0"].GetString()).rfind("local-lvm:base-", 0), 0u)
      << json::serialize((*tmpl)["config"]);

  // Importing again (a lost token, a second Provider pod) finds the template: no new VM.
  out = driver_->importImage(request());
  ASSERT_TRUE(out.ok()) << out.reason << ": " << out.message;
  EXPECT_STREQ(json::parse(out.body, "r")["status"]["zones"][0]["resolvedRef"].GetString(),
               vmid.c_str());
  EXPECT_EQ(fake_->state()["vms"].Size(), state["vms"].Size());

  // A ProxmoxMachine clones the imported template.
  std::string object =
      machine("from-import", "a1b2c3d4-0000-4000-8000-0000000000a1", "", "PoweredOn", "pve1");
  object.replace(object.find("9000"), 4, vmid);
  CallOutcome made = driver_->drive("reconcile", object);
  ASSERT_TRUE(made.ok()) << made.reason << ": " << made.message;
  CallOutcome gone = driver_->drive("finalize", object);
  EXPECT_TRUE(gone.ok()) << gone.reason << ": " << gone.message;

  // delete_image (issue #20, ADR 0037) destroys the template through a task polled by its UPID;
  // asked again, it finds nothing and is OK.
  const std::string remove =
      R"({"image":{"metadata":{"name":"noble"}},"failureDomain":"pve1","resolvedRef":")" + vmid +
      R"("})";
  CallOutcome removed = driver_->deleteImage(remove);
  ASSERT_TRUE(removed.ok()) << removed.reason << ": " << removed.message;
  EXPECT_EQ(templateNamed(fake_->state(), name), nullptr) << json::serialize(fake_->state());
  CallOutcome again = driver_->deleteImage(remove);
  EXPECT_TRUE(again.ok()) << again.reason << ": " << again.message;
}

TEST_F(ProxmoxImportTest, ChecksumsFailClosedBeforeAnythingIsWritten) {
  const std::string before = json::serialize(fake_->state()["vms"]);
  std::string wrong(128, '0');
  CallOutcome out = driver_->importImage(request("pve1", "sha512:" + wrong));
  EXPECT_EQ(out.code, BANLIEUE_FAILED_PRECONDITION);
  EXPECT_EQ(out.reason, "ChecksumMismatch") << out.message;
  EXPECT_NE(out.message.find("sha512"), std::string::npos) << out.message;

  out = driver_->importImage(request("pve1", {}, std::string(64, 'a')));
  EXPECT_EQ(out.reason, "ChecksumMismatch") << out.message;
  EXPECT_NE(out.message.find("sha256"), std::string::npos) << out.message;

  out = driver_->importImage(request("pve1", "md5:0123456789abcdef0123456789abcdef"));
  EXPECT_EQ(out.code, BANLIEUE_INVALID_ARGUMENT);
  EXPECT_EQ(out.reason, "UnsupportedChecksum") << out.message;

  out = driver_->importImage(request("pve1", "sha256:abc"));
  EXPECT_EQ(out.reason, "UnsupportedChecksum") << out.message;
  EXPECT_EQ(json::serialize(fake_->state()["vms"]), before) << "a refused import created a VM";
}

TEST_F(ProxmoxImportTest, AHostKeyThatIsNotThePinnedOneIsRefused) {
  Driver other;
  ASSERT_TRUE(other
                  .create(fake_->instanceConfig(FakePve::kSecret, kCapabilities, true,
                                                sshCredentials(*sshd_, sshd_->wrongKnownHosts())))
                  .ok());
  CallOutcome out = other.importImage(request());
  EXPECT_EQ(out.code, BANLIEUE_FAILED_PRECONDITION);
  EXPECT_EQ(out.reason, "HostKeyMismatch") << out.message;
  EXPECT_NE(out.message.find("pve1"), std::string::npos) << out.message;

  // Pins for another host only: nothing vouches for this one.
  Driver unpinned;
  ASSERT_TRUE(
      unpinned
          .create(fake_->instanceConfig(
              FakePve::kSecret, kCapabilities, true,
              sshCredentials(*sshd_, "[10.9.9.9]:22 " + sshd_->knownHosts().substr(
                                                            sshd_->knownHosts().find(' ') + 1))))
          .ok());
  out = unpinned.importImage(request());
  EXPECT_EQ(out.reason, "HostKeyNotPinned") << out.message;
}

TEST_F(ProxmoxImportTest, MissingSshSettingsAndAnOfflineNodeAreNamed) {
  Driver no_ssh;
  ASSERT_TRUE(no_ssh.create(fake_->instanceConfig(FakePve::kSecret, kCapabilities)).ok());
  CallOutcome out = no_ssh.importImage(request());
  EXPECT_EQ(out.code, BANLIEUE_FAILED_PRECONDITION);
  EXPECT_EQ(out.reason, "SshNotConfigured") << out.message;

  out = driver_->importImage(request("pve3"));
  EXPECT_EQ(out.code, BANLIEUE_UNAVAILABLE);
  EXPECT_EQ(out.reason, "NodeOffline") << out.message;

  // A key without pins is refused when the instance is made, not at the first upload.
  Driver unpinned;
  std::string creds = sshCredentials(*sshd_, "");
  CallOutcome created =
      unpinned.create(fake_->instanceConfig(FakePve::kSecret, kCapabilities, true, creds));
  EXPECT_EQ(created.reason, "SecretInvalid") << created.message;
}

TEST_F(ProxmoxImportTest, UserDataReachesTheGuestAsACloudInitSnippet) {
  const std::string uid = "a1b2c3d4-0000-4000-8000-0000000000b1";
  auto with = [&](const std::string& user_data) {
    return machine("cloudy", uid, R"(,"userData":")" + jsonEscape(user_data) + R"(")");
  };
  const std::string first = "#cloud-config\nhostname: cloudy\nruncmd: [\"echo one\"]\n";
  CallOutcome out = driver_->drive("reconcile", with(first));
  ASSERT_TRUE(out.ok()) << out.reason << ": " << out.message;
  auto state = fake_->state();
  const rapidjson::Value* vm = nullptr;
  for (const auto& v : state["vms"].GetArray()) {
    if (json::stringOr(&v, "name") == "cloudy") vm = &v;
  }
  ASSERT_NE(vm, nullptr);
  // The start task read the snippet the cicustom names: the content the guest boots with.
  EXPECT_EQ(json::stringOr(vm, "cloudinitUser"), first);
  const std::string cicustom = json::stringOr(vm, "config.cicustom");
  EXPECT_EQ(cicustom.rfind("user=local:snippets/banlieue-" + uid + "-", 0), 0u) << cicustom;
  ASSERT_EQ(state["files"].Size(), 1u);
  EXPECT_EQ(cicustom.substr(5), state["files"][0].GetString());

  // Changed userData: a new snippet, the old one removed, nothing uploaded when unchanged.
  const std::string second = "#cloud-config\nhostname: cloudy\nruncmd: [\"echo two\"]\n";
  out = driver_->drive("reconcile", with(second));
  ASSERT_TRUE(out.ok()) << out.reason << ": " << out.message;
  state = fake_->state();
  ASSERT_EQ(state["files"].Size(), 1u) << json::serialize(state["files"]);
  EXPECT_NE(cicustom.substr(5), state["files"][0].GetString());
  EXPECT_EQ(readFile(fake_->storageDir() + "/snippets/" +
                     std::string(state["files"][0].GetString()).substr(15)),
            second);

  // Deleting the machine removes its snippet (the TearDown checks no file is left).
  out = driver_->drive("finalize", with(second));
  EXPECT_TRUE(out.ok()) << out.reason << ": " << out.message;
}

TEST_F(ProxmoxImportTest, UserDataWithoutSshSettingsIsNamedNotDropped) {
  Driver no_ssh;
  ASSERT_TRUE(no_ssh.create(fake_->instanceConfig(FakePve::kSecret, kCapabilities)).ok());
  const std::string object =
      machine("nossh", "a1b2c3d4-0000-4000-8000-0000000000b2", R"(,"userData":"#cloud-config\n")");
  CallOutcome out = no_ssh.drive("reconcile", object);
  EXPECT_EQ(out.code, BANLIEUE_FAILED_PRECONDITION);
  EXPECT_EQ(out.reason, "SshNotConfigured") << out.message;
  // It never started without its userData.
  for (const auto& v : fake_->state()["vms"].GetArray()) {
    if (json::stringOr(&v, "name") == "nossh") {
      EXPECT_STREQ(v["status"].GetString(), "stopped");
    }
  }
  CallOutcome gone = no_ssh.drive("finalize", object);
  EXPECT_TRUE(gone.ok()) << gone.reason << ": " << gone.message;
}

}  // namespace
}  // namespace banlieue::proxmox::testing
