// RAII owners for libvirt objects and the translation of libvirt errors into banlieue codes.
// Every libvirt failure goes through raiseLast(), so one table decides what NOT_FOUND means:
// only the "no such domain/pool/volume/network/snapshot" codes are not-found; anything else is a
// real failure and is never read as "absent".
#pragma once

#include <banlieue/sdk/status.h>
#include <libvirt/libvirt.h>
#include <libvirt/virterror.h>

#include <memory>
#include <optional>
#include <string>

namespace banlieue::libvirt {

struct DomainFree {
  void operator()(virDomainPtr p) const { virDomainFree(p); }
};
struct PoolFree {
  void operator()(virStoragePoolPtr p) const { virStoragePoolFree(p); }
};
struct VolFree {
  void operator()(virStorageVolPtr p) const { virStorageVolFree(p); }
};
struct NetworkFree {
  void operator()(virNetworkPtr p) const { virNetworkFree(p); }
};
struct StreamFree {
  void operator()(virStreamPtr p) const { virStreamFree(p); }
};
struct SnapshotFree {
  void operator()(virDomainSnapshotPtr p) const { virDomainSnapshotFree(p); }
};
struct CharFree {
  void operator()(char* p) const { free(p); }  // NOLINT(cppcoreguidelines-no-malloc)
};

using Domain = std::unique_ptr<virDomain, DomainFree>;
using Pool = std::unique_ptr<virStoragePool, PoolFree>;
using Volume = std::unique_ptr<virStorageVol, VolFree>;
using Network = std::unique_ptr<virNetwork, NetworkFree>;
using Stream = std::unique_ptr<virStream, StreamFree>;
using Snapshot = std::unique_ptr<virDomainSnapshot, SnapshotFree>;
using CString = std::unique_ptr<char, CharFree>;

// The calling thread's last libvirt error, copied (code 0 when there is none).
struct LibvirtError {
  int code = 0;
  int domain = 0;
  int int1 = 0;  // errno for VIR_ERR_SYSTEM_ERROR
  std::string message;

  static LibvirtError last();
  bool isNotFound() const;
};

// The banlieue code and Condition reason for a libvirt error.
sdk::Error toError(const LibvirtError& error, const std::string& what);

// Throws toError(LibvirtError::last(), what).
[[noreturn]] void raiseLast(const std::string& what);

// Lookups that return nullopt only for not-found and throw every other failure.
std::optional<Domain> findDomainByName(virConnectPtr conn, const std::string& name);
std::optional<Domain> findDomainByUuid(virConnectPtr conn, const std::string& uuid);
std::optional<Pool> findPool(virConnectPtr conn, const std::string& name);
std::optional<Volume> findVolume(virStoragePoolPtr pool, const std::string& name);
std::optional<Network> findNetwork(virConnectPtr conn, const std::string& name);
std::optional<Snapshot> findSnapshot(virDomainPtr domain, const std::string& name);

std::string domainUuidString(virDomainPtr domain);

}  // namespace banlieue::libvirt
