// The libvirt plugin through the C ABI against libvirt's test driver (test:///default, whose
// state is shared within the process): the plugin harness, the test's own connection to inspect
// what the plugin did, and a fixture with a base image and a per-test machine name.
#pragma once

#include "plugins/libvirt/test/plugin_harness.h"

#include <libvirt/libvirt.h>
#include <libvirt/virterror.h>
#include <unistd.h>

#include <cctype>
#include <cstdio>
#include <functional>
#include <string>
#include <vector>

namespace banlieue::libvirt::testing {

// The test's own view of test:///default.
class Inspector {
 public:
  Inspector() : conn_(virConnectOpen("test:///default")) {}
  ~Inspector() { virConnectClose(conn_); }
  virConnectPtr get() const { return conn_; }

  bool hasDomain(const std::string& name) const {
    virDomainPtr d = virDomainLookupByName(conn_, name.c_str());
    if (d != nullptr) virDomainFree(d);
    return d != nullptr;
  }
  // The running domain's ID: a new one at every start. -1 when it is not running.
  int domainId(const std::string& name) const {
    virDomainPtr d = virDomainLookupByName(conn_, name.c_str());
    if (d == nullptr) return -1;
    unsigned int id = virDomainGetID(d);
    virDomainFree(d);
    return id == static_cast<unsigned int>(-1) ? -1 : static_cast<int>(id);
  }
  int domainState(const std::string& name) const {
    virDomainPtr d = virDomainLookupByName(conn_, name.c_str());
    if (d == nullptr) return -1;
    int state = -1, reason = 0;
    virDomainGetState(d, &state, &reason, 0);
    virDomainFree(d);
    return state;
  }
  int domainCount() const {
    virDomainPtr* list = nullptr;
    int n = virConnectListAllDomains(conn_, &list, 0);
    for (int i = 0; i < n; ++i) virDomainFree(list[i]);
    free(list);
    return n;
  }
  std::string domainXml(const std::string& name) const {
    virDomainPtr d = virDomainLookupByName(conn_, name.c_str());
    if (d == nullptr) return {};
    char* xml = virDomainGetXMLDesc(d, 0);
    std::string out = xml != nullptr ? xml : "";
    free(xml);
    virDomainFree(d);
    return out;
  }
  // The names of the domain's snapshots as libvirt holds them (`virsh snapshot-list`).
  std::vector<std::string> snapshotNames(const std::string& domain) const {
    std::vector<std::string> names;
    virDomainPtr d = virDomainLookupByName(conn_, domain.c_str());
    if (d == nullptr) return names;
    virDomainSnapshotPtr* list = nullptr;
    int n = virDomainListAllSnapshots(d, &list, 0);
    for (int i = 0; i < n; ++i) {
      names.emplace_back(virDomainSnapshotGetName(list[i]));
      virDomainSnapshotFree(list[i]);
    }
    free(list);
    virDomainFree(d);
    return names;
  }
  // The snapshot libvirt calls current (`virsh snapshot-current --name`), "" when none.
  std::string currentSnapshot(const std::string& domain) const {
    virDomainPtr d = virDomainLookupByName(conn_, domain.c_str());
    if (d == nullptr) return {};
    virDomainSnapshotPtr s = virDomainSnapshotCurrent(d, 0);
    std::string name = s != nullptr ? virDomainSnapshotGetName(s) : "";
    if (s != nullptr) virDomainSnapshotFree(s);
    virDomainFree(d);
    return name;
  }
  // Takes a snapshot behind the plugin's back, as a user with virsh would.
  void createSnapshot(const std::string& domain, const std::string& name) {
    virDomainPtr d = virDomainLookupByName(conn_, domain.c_str());
    ASSERT_NE(d, nullptr) << virGetLastErrorMessage();
    std::string xml = "<domainsnapshot><name>" + name + "</name></domainsnapshot>";
    virDomainSnapshotPtr s = virDomainSnapshotCreateXML(d, xml.c_str(), 0);
    virDomainFree(d);
    ASSERT_NE(s, nullptr) << virGetLastErrorMessage();
    virDomainSnapshotFree(s);
  }
  bool hasVolume(const std::string& name, const std::string& pool = "default-pool") const {
    virStoragePoolPtr p = virStoragePoolLookupByName(conn_, pool.c_str());
    if (p == nullptr) return false;
    virStorageVolPtr v = virStorageVolLookupByName(p, name.c_str());
    virStoragePoolFree(p);
    if (v != nullptr) virStorageVolFree(v);
    return v != nullptr;
  }
  std::string volumeXml(const std::string& name) const {
    virStoragePoolPtr p = virStoragePoolLookupByName(conn_, "default-pool");
    virStorageVolPtr v = virStorageVolLookupByName(p, name.c_str());
    virStoragePoolFree(p);
    if (v == nullptr) return {};
    char* xml = virStorageVolGetXMLDesc(v, 0);
    std::string out = xml != nullptr ? xml : "";
    free(xml);
    virStorageVolFree(v);
    return out;
  }
  void createVolume(const std::string& name, uint64_t gib) {
    virStoragePoolPtr p = virStoragePoolLookupByName(conn_, "default-pool");
    std::string xml = "<volume><name>" + name + "</name><capacity unit='GiB'>" +
                      std::to_string(gib) +
                      "</capacity><target><format type='qcow2'/></target></volume>";
    virStorageVolPtr v = virStorageVolCreateXML(p, xml.c_str(), 0);
    ASSERT_NE(v, nullptr) << virGetLastErrorMessage();
    virStorageVolFree(v);
    virStoragePoolFree(p);
  }
  void deleteVolume(const std::string& name) {
    virStoragePoolPtr p = virStoragePoolLookupByName(conn_, "default-pool");
    virStorageVolPtr v = virStorageVolLookupByName(p, name.c_str());
    if (v != nullptr) {
      virStorageVolDelete(v, 0);
      virStorageVolFree(v);
    }
    virStoragePoolFree(p);
  }

 private:
  virConnectPtr conn_;
};

class LibvirtPluginTest : public ::testing::Test {
 protected:
  void SetUp() override {
    ASSERT_FALSE(pluginPath().empty()) << "BANLIEUE_LIBVIRT_PLUGIN is not set";
    auto created = harness_.create(ProviderSpec{});
    ASSERT_TRUE(created.ok()) << describeOutcome(created);
    inspector_.createVolume(base_, 2);
    opts_.name = ::testing::UnitTest::GetInstance()->current_test_info()->name();
    for (char& c : opts_.name) c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
    opts_.uid = sdk::abi::str(opts_.name).data == nullptr ? "" : uidFor(opts_.name);
    opts_.boot_volume = base_;
  }
  void TearDown() override {
    (void)harness_.finalize(opts_);
    inspector_.deleteVolume(base_);
  }
  static std::string uidFor(const std::string& name) {
    char buf[37];
    std::snprintf(
        buf, sizeof(buf), "0000%04x-0000-4000-8000-%012llx", 1u,
        static_cast<unsigned long long>(std::hash<std::string>{}(name)&0xFFFFFFFFFFFFull));
    return buf;
  }
  std::string domain() const { return "default-" + opts_.name; }
  std::string body(const sdk::abi::CallOutcome& o) const { return o.body; }

  Harness harness_;
  Inspector inspector_;
  std::string base_ = "base-" + std::to_string(::getpid()) + ".qcow2";
  MachineOptions opts_;
};

}  // namespace banlieue::libvirt::testing
