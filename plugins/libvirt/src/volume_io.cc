#include "plugins/libvirt/src/volume_io.h"

#include "plugins/libvirt/src/domain_xml.h"
#include "plugins/libvirt/src/libvirt_handles.h"

#include <fstream>
#include <vector>

namespace banlieue::libvirt {

using sdk::Code;
using sdk::Error;

namespace {

constexpr size_t kChunk = size_t{256} << 10;

// Sends everything, then finishes; aborts the stream on any failure so the daemon frees it.
void sendAll(virStreamPtr st, const std::function<bool(std::vector<char>&, size_t&)>& next,
             const std::string& what) {
  std::vector<char> buf(kChunk);
  for (;;) {
    size_t len = 0;
    bool more = false;
    try {
      more = next(buf, len);
    } catch (...) {
      virStreamAbort(st);
      throw;
    }
    size_t off = 0;
    while (off < len) {
      int n = virStreamSend(st, buf.data() + off, len - off);
      if (n < 0) {
        LibvirtError e = LibvirtError::last();
        virStreamAbort(st);
        throw toError(e, what);
      }
      off += static_cast<size_t>(n);
    }
    if (!more) break;
  }
  if (virStreamFinish(st) != 0) {
    LibvirtError e = LibvirtError::last();
    virStreamAbort(st);
    throw toError(e, what);
  }
}

Error uploadError(const LibvirtError& e, const std::string& what) {
  if (e.code == VIR_ERR_NO_SUPPORT) {
    // The slot is implemented; this backend lacks what it needs. UNIMPLEMENTED would say the
    // plugin does not offer what describe claims.
    return {Code::kFailedPrecondition, "UploadUnsupported",
            what + ": this libvirt driver cannot upload volume content (" + e.message + ")"};
  }
  return toError(e, what);
}

}  // namespace

uint64_t volumeCapacity(virStorageVolPtr vol) {
  virStorageVolInfo info{};
  if (virStorageVolGetInfo(vol, &info) != 0) raiseLast("reading volume info");
  return info.capacity;
}

std::string volumePath(virStorageVolPtr vol) {
  CString path(virStorageVolGetPath(vol));
  if (!path) raiseLast("reading the volume path");
  return path.get();
}

std::string volumeFormat(virStorageVolPtr vol) {
  CString xml(virStorageVolGetXMLDesc(vol, 0));
  if (!xml) raiseLast("reading the volume definition");
  auto format = declaredVolumeFormat(xml.get());
  return format && !format->empty() ? *format : "raw";
}

void writeVolume(virConnectPtr conn, virStoragePoolPtr pool, const std::string& name,
                 const std::string& format, const std::string& content, const sdk::Call& call) {
  if (auto existing = findVolume(pool, name)) {
    if (virStorageVolDelete(existing->get(), 0) != 0) raiseLast("replacing volume " + name);
  }
  VolumeSpec spec{name, content.size(), format, {}, {}};
  std::string xml = volumeXml(spec);
  Volume vol(virStorageVolCreateXML(pool, xml.c_str(), 0));
  if (!vol) raiseLast("creating volume " + name);
  try {
    Stream st(virStreamNew(conn, 0));
    if (!st) raiseLast("opening a stream for " + name);
    if (virStorageVolUpload(vol.get(), st.get(), 0, content.size(), 0) != 0) {
      throw uploadError(LibvirtError::last(), "uploading " + name);
    }
    size_t offset = 0;
    sendAll(
        st.get(),
        [&](std::vector<char>& buf, size_t& len) {
          if (call.cancelled()) {
            throw Error(Code::kCancelled, "Cancelled", "upload of " + name + " was cancelled");
          }
          len = std::min(buf.size(), content.size() - offset);
          std::copy_n(content.data() + offset, len, buf.data());
          offset += len;
          return offset < content.size();
        },
        "uploading " + name);
  } catch (...) {
    virStorageVolDelete(vol.get(), 0);
    throw;
  }
}

void uploadFile(virConnectPtr conn, virStorageVolPtr vol, const std::string& path, uint64_t size,
                const std::function<void(uint64_t)>& progress, const std::function<bool()>& stop) {
  std::ifstream in(path, std::ios::binary);
  if (!in) {
    throw Error(Code::kFailedPrecondition, "ArtifactUnreadable", "cannot read artifact " + path);
  }
  Stream st(virStreamNew(conn, 0));
  if (!st) raiseLast("opening an upload stream");
  if (virStorageVolUpload(vol, st.get(), 0, size, 0) != 0) {
    throw uploadError(LibvirtError::last(), "uploading " + path);
  }
  uint64_t sent = 0;
  sendAll(
      st.get(),
      [&](std::vector<char>& buf, size_t& len) {
        if (stop()) throw Error(Code::kCancelled, "Cancelled", "the upload was cancelled");
        uint64_t want = std::min<uint64_t>(buf.size(), size - sent);
        in.read(buf.data(), static_cast<std::streamsize>(want));
        len = static_cast<size_t>(in.gcount());
        if (len != want) {
          throw Error(Code::kFailedPrecondition, "ArtifactTruncated",
                      "artifact " + path + " ended after " + std::to_string(sent + len) + " of " +
                          std::to_string(size) + " bytes");
        }
        sent += len;
        progress(sent);
        return sent < size;
      },
      "uploading " + path);
}

}  // namespace banlieue::libvirt
