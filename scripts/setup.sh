#!/usr/bin/env bash
# Installs everything banlieue needs to build and test, from Debian 12 packages only.
# Idempotent: when every package is already installed it does nothing (no apt-get at all).
# Run as root, or as a user with sudo.
set -euo pipefail

packages=(
  # toolchain
  build-essential cmake ninja-build pkg-config git ccache binutils
  clang-format clang-tidy
  # scripts/lint.sh: compile_commands.json lookups for the clang-tidy result cache
  jq
  # libraries (see DESIGN.md: Boost.DLL, CLI11, spdlog, RapidJSON, OpenSSL)
  libboost-dev libcli11-dev libspdlog-dev libfmt-dev rapidjson-dev libssl-dev
  libcpprest-dev libyaml-cpp-dev
  # the vSphere plugin (XML) and its vcsim, built from Debian's govmomi simulator library
  libpugixml-dev golang-go golang-github-vmware-govmomi-dev
  # tests and benchmarks
  libgtest-dev libgmock-dev libbenchmark-dev
  # the local control plane (deploy/local): etcd, certificates, readiness probes, free ports
  etcd-server openssl curl iproute2 procps coreutils
  # the libvirt plugin (issue #8): the C API, and for its e2e test a libvirtd with QEMU (TCG),
  # virsh, and qemu-img (dir pools create qcow2 volumes with it)
  libvirt-dev libvirt-clients libvirt-daemon-system libvirt-daemon-driver-qemu qemu-system-x86
  qemu-utils
  # UEFI firmware for QEMU: VMClass firmware defaults to efi (scripts/dev.sh --real boots with it)
  ovmf
  # the fake PVE API of the proxmox plugin tests and its cross-check (tests/proxmox)
  python3 python3-proxmoxer python3-requests
  # the proxmox plugin's image and snippet upload (libssh2, SFTP) and its test's sshd on loopback
  libssh2-1-dev openssh-server openssh-client
)
# kubectl: the machine's Cloud SDK dispatcher when present, else Debian's kubectl 1.20.
command -v kubectl >/dev/null || packages+=(kubernetes-client)

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
