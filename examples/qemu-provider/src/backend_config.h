// What a Provider's connection endpoint says about the QEMU backend:
//
//   qemu:///var/lib/banlieue-qemu?accel=auto&qemu=/usr/bin/qemu-system-x86_64
//
// The path is the state directory that holds every machine's files (made when missing);
// options, joined with '&': accel=kvm|tcg|auto (auto, the default: KVM when /dev/kvm opens
// read-write, else TCG), qemu=<absolute path> and qemuImg=<absolute path> (the binaries),
// powerdownSeconds=N (how long a power-off waits for the guest after ACPI powerdown before it
// quits QEMU; 30).
#pragma once

#include <chrono>
#include <filesystem>
#include <string>

namespace qemu_provider {

struct BackendConfig {
  std::filesystem::path state_dir;
  std::string accel_requested = "auto";  // as the endpoint says
  std::string accel;                     // kvm or tcg, resolved by resolve()
  std::filesystem::path qemu = "/usr/bin/qemu-system-x86_64";
  std::filesystem::path qemu_img = "/usr/bin/qemu-img";
  std::chrono::seconds powerdown_grace{30};

  // Parses the endpoint; INVALID_ARGUMENT (reason InvalidEndpoint) naming what is wrong.
  static BackendConfig parse(const std::string& endpoint);

  // Checks the host (I/O, for instance_create): the state directory is made and writable
  // (UNAVAILABLE, StateDirUnreachable), the binaries are executable (FAILED_PRECONDITION,
  // QemuNotFound), and the accelerator is resolved (FAILED_PRECONDITION, AccelUnavailable,
  // when accel=kvm and /dev/kvm cannot be opened read-write).
  void resolve();
};

}  // namespace qemu_provider
