#include "tests/support/build_paths.h"

// BP_* come from tests/support/CMakeLists.txt, for this file alone.
namespace banlieue::testing::build_paths {

const char* banlieueBinary() {
  return BP_BANLIEUE_BINARY;
}
const char* sourceDir() {
  return BP_SOURCE_DIR;
}
const char* buildDir() {
  return BP_BUILD_DIR;
}
const char* pluginDir() {
  return BP_PLUGIN_DIR;
}
const char* testPluginRoot() {
  return BP_TEST_PLUGIN_ROOT;
}
const char* imagesTestDir() {
  return BP_SOURCE_DIR "/tests/images";
}
const char* kubeListNamespaces() {
  return BP_KUBE_LIST_NAMESPACES;
}
const char* leaderCandidate() {
  return BP_LEADER_CANDIDATE;
}
const char* privateLibvirtdHolder() {
  return BP_PRIVATE_LIBVIRTD_HOLDER;
}
const char* vcsimBinary() {
  return BP_BUILD_DIR "/tests/vsphere/vcsim";
}
const char* vspherePlugin() {
  return BP_VSPHERE_PLUGIN;
}
const char* vspherePluginDir() {
  return BP_VSPHERE_PLUGIN_DIR;
}
const char* vsphereRecorded() {
  return BP_SOURCE_DIR "/tests/vsphere/recorded";
}
const char* proxmoxPlugin() {
  return BP_PROXMOX_PLUGIN;
}
const char* proxmoxPluginDir() {
  return BP_PROXMOX_PLUGIN_DIR;
}
const char* fakePveScript() {
  return BP_SOURCE_DIR "/tests/proxmox/fake_pve.py";
}

}  // namespace banlieue::testing::build_paths
