// Volume facts and byte transfer through libvirt's stream API (works over TLS and SSH, so the
// plugin never needs filesystem access to the host's pools).
#pragma once

#include <banlieue/sdk/host.h>
#include <libvirt/libvirt.h>

#include <atomic>
#include <cstdint>
#include <functional>
#include <string>

namespace banlieue::libvirt {

uint64_t volumeCapacity(virStorageVolPtr vol);
std::string volumePath(virStorageVolPtr vol);
// The <target><format type> of the volume ("raw" when libvirt reports none).
std::string volumeFormat(virStorageVolPtr vol);

// Replaces volume `name` in `pool` with exactly `content` (created raw/qcow2 container sized to
// it). On any failure the volume is deleted again, so a half-written seed never lingers.
// A driver without stream uploads (the test driver) fails with FAILED_PRECONDITION, reason
// UploadUnsupported.
void writeVolume(virConnectPtr conn, virStoragePoolPtr pool, const std::string& name,
                 const std::string& format, const std::string& content, const sdk::Call& call);

// Streams `size` bytes of the file at `path` into an existing volume. progress(bytes_sent)
// is called after each chunk; stop() is polled between chunks and aborts the stream.
void uploadFile(virConnectPtr conn, virStorageVolPtr vol, const std::string& path, uint64_t size,
                const std::function<void(uint64_t)>& progress, const std::function<bool()>& stop);

}  // namespace banlieue::libvirt
