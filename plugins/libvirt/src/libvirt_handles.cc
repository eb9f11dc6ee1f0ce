#include "plugins/libvirt/src/libvirt_handles.h"

#include <cerrno>

namespace banlieue::libvirt {

using sdk::Code;
using sdk::Error;

LibvirtError LibvirtError::last() {
  LibvirtError out;
  virErrorPtr e = virGetLastError();
  if (e != nullptr) {
    out.code = e->code;
    out.domain = e->domain;
    out.int1 = e->int1;
    out.message = e->message != nullptr ? e->message : "";
  }
  return out;
}

bool LibvirtError::isNotFound() const {
  return code == VIR_ERR_NO_DOMAIN || code == VIR_ERR_NO_STORAGE_POOL ||
         code == VIR_ERR_NO_STORAGE_VOL || code == VIR_ERR_NO_NETWORK ||
         code == VIR_ERR_NO_DOMAIN_SNAPSHOT;
}

Error toError(const LibvirtError& e, const std::string& what) {
  std::string message = what + ": " + (e.message.empty() ? "unknown libvirt error" : e.message);
  switch (e.code) {
    case VIR_ERR_NO_DOMAIN: return {Code::kNotFound, "DomainNotFound", message};
    case VIR_ERR_NO_STORAGE_POOL: return {Code::kNotFound, "PoolNotFound", message};
    case VIR_ERR_NO_STORAGE_VOL: return {Code::kNotFound, "VolumeNotFound", message};
    case VIR_ERR_NO_NETWORK: return {Code::kNotFound, "NetworkNotFound", message};
    case VIR_ERR_NO_DOMAIN_SNAPSHOT: return {Code::kNotFound, "SnapshotNotFound", message};
    case VIR_ERR_DOM_EXIST:
    case VIR_ERR_STORAGE_VOL_EXIST:
    case VIR_ERR_NETWORK_EXIST: return {Code::kAlreadyExists, "AlreadyExists", message};
    case VIR_ERR_AUTH_FAILED:
    case VIR_ERR_AUTH_CANCELLED:
    case VIR_ERR_AUTH_UNAVAILABLE: return {Code::kUnauthenticated, "AuthenticationFailed", message};
    case VIR_ERR_OPERATION_DENIED:
    case VIR_ERR_ACCESS_DENIED: return {Code::kPermissionDenied, "PermissionDenied", message};
    case VIR_ERR_NO_SUPPORT:
    case VIR_ERR_OPERATION_UNSUPPORTED: return {Code::kUnimplemented, "NotSupported", message};
    case VIR_ERR_OPERATION_TIMEOUT:
    case VIR_ERR_AGENT_UNRESPONSIVE: return {Code::kDeadlineExceeded, "Timeout", message};
    case VIR_ERR_INVALID_ARG:
    case VIR_ERR_XML_ERROR:
    case VIR_ERR_XML_DETAIL:
    case VIR_ERR_CONFIG_UNSUPPORTED:
      return {Code::kInvalidArgument, "InvalidConfiguration", message};
    case VIR_ERR_OPERATION_INVALID: return {Code::kFailedPrecondition, "InvalidState", message};
    // A revert libvirt would only do by force (e.g. a domain ABI that changed since).
    case VIR_ERR_SNAPSHOT_REVERT_RISKY:
      return {Code::kFailedPrecondition, "SnapshotRevertRisky", message};
    case VIR_ERR_NO_CONNECT:
    case VIR_ERR_RPC:
    case VIR_ERR_INVALID_CONN: return {Code::kUnavailable, "ConnectionLost", message};
    case VIR_ERR_SYSTEM_ERROR:
      switch (e.int1) {
        case ENOSPC:
        case EDQUOT: return {Code::kResourceExhausted, "OutOfSpace", message};
        case EACCES:
        case EPERM: return {Code::kPermissionDenied, "PermissionDenied", message};
        case ECONNREFUSED:
        case ECONNRESET:
        case EHOSTUNREACH:
        case ENETUNREACH:
        case ETIMEDOUT:
        case EPIPE:
        case ENOENT: return {Code::kUnavailable, "BackendUnavailable", message};
        default: return {Code::kUnavailable, "BackendError", message};
      }
    default: break;
  }
  // Messages libvirt only distinguishes by text (both VIR_ERR_OPERATION_FAILED).
  if (message.find("No space left") != std::string::npos) {
    return {Code::kResourceExhausted, "OutOfSpace", message};
  }
  if (message.find("already exists with uuid") != std::string::npos ||
      message.find("already defined with uuid") != std::string::npos) {
    return {Code::kAlreadyExists, "DomainNameConflict", message};
  }
  return {Code::kInternal, "LibvirtError", message};
}

void raiseLast(const std::string& what) {
  throw toError(LibvirtError::last(), what);
}

namespace {

template <class Handle, class Ptr>
std::optional<Handle> foundOrThrow(Ptr p, const std::string& what) {
  if (p != nullptr) return Handle(p);
  LibvirtError e = LibvirtError::last();
  if (e.isNotFound()) return std::nullopt;
  throw toError(e, what);
}

}  // namespace

std::optional<Domain> findDomainByName(virConnectPtr conn, const std::string& name) {
  return foundOrThrow<Domain>(virDomainLookupByName(conn, name.c_str()),
                              "looking up domain " + name);
}

std::optional<Domain> findDomainByUuid(virConnectPtr conn, const std::string& uuid) {
  return foundOrThrow<Domain>(virDomainLookupByUUIDString(conn, uuid.c_str()),
                              "looking up domain uuid " + uuid);
}

std::optional<Pool> findPool(virConnectPtr conn, const std::string& name) {
  return foundOrThrow<Pool>(virStoragePoolLookupByName(conn, name.c_str()),
                            "looking up storage pool " + name);
}

std::optional<Volume> findVolume(virStoragePoolPtr pool, const std::string& name) {
  return foundOrThrow<Volume>(virStorageVolLookupByName(pool, name.c_str()),
                              "looking up volume " + name);
}

std::optional<Network> findNetwork(virConnectPtr conn, const std::string& name) {
  return foundOrThrow<Network>(virNetworkLookupByName(conn, name.c_str()),
                               "looking up network " + name);
}

std::optional<Snapshot> findSnapshot(virDomainPtr domain, const std::string& name) {
  return foundOrThrow<Snapshot>(virDomainSnapshotLookupByName(domain, name.c_str(), 0),
                                "looking up snapshot " + name);
}

std::string domainUuidString(virDomainPtr domain) {
  char buf[VIR_UUID_STRING_BUFLEN] = {0};
  if (virDomainGetUUIDString(domain, buf) != 0) raiseLast("reading the domain uuid");
  return buf;
}

}  // namespace banlieue::libvirt
