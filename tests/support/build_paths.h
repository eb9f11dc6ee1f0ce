// Where this build's binaries, plugins and the test data of the source tree are, for tests that
// run them. The paths are compiled into one small library (build_paths.cc), not into each test:
// a path in a test's compile flags differs between clones, so every clone compiled those tests
// again (CI's warm run builds a clone at a new path: 34 files, about 90 s of its build step).
#pragma once

namespace banlieue::testing::build_paths {

const char* banlieueBinary();         // the `banlieue` executable
const char* sourceDir();              // the source tree
const char* buildDir();               // the build tree
const char* pluginDir();              // the in-tree plugins, one directory per backend
const char* testPluginRoot();         // tests/abi's test plugins, one directory per variant
const char* imagesTestDir();          // tests/images in the source tree
const char* kubeListNamespaces();     // tests/support/kube_list_namespaces
const char* leaderCandidate();        // tests/support/leader_candidate
const char* privateLibvirtdHolder();  // tests/support/private_libvirtd_holder
const char* vcsimBinary();            // the project's vcsim
const char* vspherePlugin();          // the vSphere plugin's shared object
const char* vspherePluginDir();       // ... and its directory
const char* vsphereRecorded();        // tests/vsphere/recorded in the source tree
const char* proxmoxPlugin();          // the Proxmox plugin's shared object
const char* proxmoxPluginDir();       // ... and its directory
const char* fakePveScript();          // tests/proxmox/fake_pve.py in the source tree

}  // namespace banlieue::testing::build_paths

// The names the tests used when these were compile definitions.
#define BANLIEUE_BINARY (::banlieue::testing::build_paths::banlieueBinary())
#define BANLIEUE_SOURCE_DIR (::banlieue::testing::build_paths::sourceDir())
#define BANLIEUE_BUILD_DIR (::banlieue::testing::build_paths::buildDir())
#define PLUGIN_DIR (::banlieue::testing::build_paths::pluginDir())
#define PLUGIN_BUILD_DIR (::banlieue::testing::build_paths::pluginDir())
#define TEST_PLUGIN_ROOT (::banlieue::testing::build_paths::testPluginRoot())
#define IMAGES_TEST_DIR (::banlieue::testing::build_paths::imagesTestDir())
#define KUBE_LIST_NAMESPACES (::banlieue::testing::build_paths::kubeListNamespaces())
#define LEADER_CANDIDATE (::banlieue::testing::build_paths::leaderCandidate())
#define BANLIEUE_PRIVATE_LIBVIRTD_HOLDER (::banlieue::testing::build_paths::privateLibvirtdHolder())
#define BANLIEUE_VCSIM_BINARY (::banlieue::testing::build_paths::vcsimBinary())
#define BANLIEUE_VSPHERE_PLUGIN (::banlieue::testing::build_paths::vspherePlugin())
#define BANLIEUE_VSPHERE_PLUGIN_DIR (::banlieue::testing::build_paths::vspherePluginDir())
#define BANLIEUE_VSPHERE_RECORDED (::banlieue::testing::build_paths::vsphereRecorded())
#define BANLIEUE_PROXMOX_PLUGIN (::banlieue::testing::build_paths::proxmoxPlugin())
#define BANLIEUE_PROXMOX_PLUGIN_DIR (::banlieue::testing::build_paths::proxmoxPluginDir())
#define BANLIEUE_FAKE_PVE_SCRIPT (::banlieue::testing::build_paths::fakePveScript())
