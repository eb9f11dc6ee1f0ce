// The one table from libvirt errors to ABI codes and Condition reasons: not-found only for the
// no-such-object codes, everything else a real failure.
#include "plugins/libvirt/src/libvirt_handles.h"

#include <gtest/gtest.h>

#include <cerrno>

namespace banlieue::libvirt {
namespace {

using sdk::Code;

sdk::Error map(int code, int int1 = 0, const std::string& message = "boom") {
  LibvirtError e;
  e.code = code;
  e.int1 = int1;
  e.message = message;
  return toError(e, "doing it");
}

TEST(LibvirtErrors, OnlyNoSuchObjectIsNotFound) {
  EXPECT_EQ(map(VIR_ERR_NO_DOMAIN).code(), Code::kNotFound);
  EXPECT_EQ(map(VIR_ERR_NO_STORAGE_POOL).reason(), "PoolNotFound");
  EXPECT_EQ(map(VIR_ERR_NO_STORAGE_VOL).reason(), "VolumeNotFound");
  EXPECT_EQ(map(VIR_ERR_NO_NETWORK).reason(), "NetworkNotFound");
  EXPECT_EQ(map(VIR_ERR_NO_DOMAIN_SNAPSHOT).code(), Code::kNotFound);
  EXPECT_EQ(map(VIR_ERR_NO_DOMAIN_SNAPSHOT).reason(), "SnapshotNotFound");
  LibvirtError no_snapshot;
  no_snapshot.code = VIR_ERR_NO_DOMAIN_SNAPSHOT;
  EXPECT_TRUE(no_snapshot.isNotFound());
  for (int code : {VIR_ERR_INTERNAL_ERROR, VIR_ERR_OPERATION_FAILED, VIR_ERR_RPC,
                   VIR_ERR_SYSTEM_ERROR, VIR_ERR_OPERATION_INVALID}) {
    EXPECT_NE(map(code, ENOENT).code(), Code::kNotFound) << code;
    LibvirtError e;
    e.code = code;
    EXPECT_FALSE(e.isNotFound());
  }
}

TEST(LibvirtErrors, SystemErrorsByErrno) {
  EXPECT_EQ(map(VIR_ERR_SYSTEM_ERROR, ENOSPC).code(), Code::kResourceExhausted);
  EXPECT_EQ(map(VIR_ERR_SYSTEM_ERROR, ENOSPC).reason(), "OutOfSpace");
  EXPECT_EQ(map(VIR_ERR_SYSTEM_ERROR, EACCES).code(), Code::kPermissionDenied);
  EXPECT_EQ(map(VIR_ERR_SYSTEM_ERROR, ECONNREFUSED).code(), Code::kUnavailable);
  EXPECT_EQ(map(VIR_ERR_OPERATION_FAILED, 0, "cannot allocate: No space left on device").reason(),
            "OutOfSpace");
}

TEST(LibvirtErrors, OtherClasses) {
  EXPECT_EQ(map(VIR_ERR_OPERATION_DENIED).code(), Code::kPermissionDenied);
  EXPECT_EQ(map(VIR_ERR_AUTH_FAILED).code(), Code::kUnauthenticated);
  EXPECT_EQ(map(VIR_ERR_NO_SUPPORT).code(), Code::kUnimplemented);
  EXPECT_EQ(map(VIR_ERR_XML_ERROR).code(), Code::kInvalidArgument);
  EXPECT_EQ(map(VIR_ERR_OPERATION_INVALID).code(), Code::kFailedPrecondition);
  EXPECT_EQ(map(VIR_ERR_STORAGE_VOL_EXIST).code(), Code::kAlreadyExists);
  EXPECT_EQ(map(VIR_ERR_OPERATION_FAILED, 0, "domain 'a' already exists with uuid x").reason(),
            "DomainNameConflict");
  EXPECT_EQ(map(VIR_ERR_INTERNAL_ERROR).code(), Code::kInternal);
  EXPECT_NE(std::string(map(VIR_ERR_INTERNAL_ERROR).what()).find("doing it: boom"),
            std::string::npos);
}

}  // namespace
}  // namespace banlieue::libvirt
