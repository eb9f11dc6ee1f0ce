#!/usr/bin/env bash
# Installs everything banlieue needs to build and test, from Debian 12 packages only.
# Idempotent: when every package is already installed it does nothing (no apt-get at all).
# Run as root, or as a user with sudo.
#
#   scripts/setup.sh               # everything: build, tests, the local cluster and its images
#   scripts/setup.sh --build-only  # only what `cmake --preset release
#                                  # -DBANLIEUE_BUILD_TESTS=OFF -DBANLIEUE_BUILD_BENCH=OFF` and
#                                  # its build need (deploy/Dockerfile's from-source stage)
set -euo pipefail

build_only=0
case "${1:-}" in
  "") ;;
  --build-only) build_only=1 ;;
  -h|--help) sed -n '2,9p' "$0" | sed 's/^# \{0,1\}//'; exit 0 ;;
  *) echo "setup: unknown argument '$1' (see --help)" >&2; exit 2 ;;
esac

# What building the binary and the in-tree plugins needs, and nothing else.
build_packages=(
  build-essential cmake ninja-build pkg-config binutils
  # lld: links take most of a rebuild; lld is several times faster than GNU ld (CMakeLists.txt)
  lld
  # the host's libraries (Boost.DLL, CLI11, spdlog, RapidJSON, OpenSSL, cpprestsdk, yaml-cpp)
  libboost-dev libcli11-dev libspdlog-dev libfmt-dev rapidjson-dev libssl-dev
  libcpprest-dev libyaml-cpp-dev zlib1g-dev
  # the plugins: vSphere (XML), libvirt (the C API), Proxmox (libssh2 for SFTP uploads)
  libpugixml-dev libvirt-dev libssh2-1-dev
)

packages=(
  "${build_packages[@]}"
  # toolchain
  git ccache
  clang-format clang-tidy
  # scripts/fuzz.sh: clang with libFuzzer and the sanitizer runtimes (preset fuzz)
  clang libclang-rt-dev
  # scripts/lint.sh: compile_commands.json lookups for the clang-tidy result cache
  jq
  # vcsim for the vSphere plugin's tests, built from Debian's govmomi simulator library
  golang-go golang-github-vmware-govmomi-dev
  # tests and benchmarks
  libgtest-dev libgmock-dev libbenchmark-dev
  # the C example plugin (examples/c-provider, test c_plugin_sdk_alone) parses JSON with jansson
  libjansson-dev
  # the local control plane (deploy/local): etcd, certificates, readiness probes, free ports
  etcd-server openssl curl iproute2 procps coreutils
  # the libvirt plugin's e2e test: a libvirtd with QEMU (TCG), virsh, and qemu-img (dir pools
  # create qcow2 volumes with it)
  libvirt-clients libvirt-daemon-system libvirt-daemon-driver-qemu qemu-system-x86
  qemu-utils
  # UEFI firmware for QEMU: VMClass firmware defaults to efi (scripts/dev.sh --real boots with it)
  ovmf
  # the fake PVE API of the proxmox plugin tests and its cross-check (tests/proxmox)
  python3 python3-proxmoxer python3-requests
  # the proxmox plugin test's sshd on loopback
  openssh-server openssh-client
  # a real HTTP proxy for the plugins' HTTPS_PROXY tests (run by the tests on loopback; the
  # package's own service is not started)
  tinyproxy
  # images built here without a daemon or a registry (deploy/local/images: a Debian base made by
  # mmdebstrap, deploy/Dockerfile built by buildah) and the local node that runs them
  # (containerd with runc, the CNI bridge/host-local/portmap/loopback plugins, conntrack for
  # kube-proxy)
  buildah mmdebstrap containerd runc containernetworking-plugins conntrack
)
# kubectl: the machine's Cloud SDK dispatcher when present, else Debian's kubectl 1.20.
command -v kubectl >/dev/null || packages+=(kubernetes-client)

if [ "$build_only" -eq 1 ]; then
  packages=("${build_packages[@]}")
fi

missing=()
for p in "${packages[@]}"; do
  if ! dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q 'install ok installed'; then
    missing+=("$p")
  fi
done

# Where /dev/kvm is root-only (0600, no udev here), libvirtd probes QEMU with KVM but QEMU runs
# as libvirt-qemu and cannot open it: every domain start then re-probes for ~45 s. udev's usual
# permissions (group kvm, 0660) fix it. Harmless where the device is absent or already open.
fix_kvm() {
  if [ -c /dev/kvm ] && [ "$(id -u)" -eq 0 ] && getent group kvm >/dev/null &&
     [ "$(stat -c %a /dev/kvm)" = 600 ]; then
    chgrp kvm /dev/kvm && chmod 0660 /dev/kvm && echo "setup: /dev/kvm is now group kvm, 0660"
  fi
}

if [ ${#missing[@]} -eq 0 ]; then
  fix_kvm
  echo "setup: all ${#packages[@]} packages present"
  exit 0
fi

sudo=""
if [ "$(id -u)" -ne 0 ]; then
  command -v sudo >/dev/null || { echo "setup: run as root (missing: ${missing[*]})" >&2; exit 1; }
  sudo="sudo"
fi
echo "setup: installing ${missing[*]}"
$sudo env DEBIAN_FRONTEND=noninteractive apt-get update -qq
$sudo env DEBIAN_FRONTEND=noninteractive apt-get install -y -qq --no-install-recommends "${missing[@]}"
fix_kvm
echo "setup: done"
