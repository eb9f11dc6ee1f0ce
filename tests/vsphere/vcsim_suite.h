// The gtest fixture base for suites that share one vcsim (kept apart from vcsim.h, which the
// benchmarks include without gtest).
#pragma once

#include "tests/vsphere/vcsim.h"

#include <gtest/gtest.h>

namespace banlieue::vsphere::testing {

// A test suite sharing one default vcsim: started before its first test, stopped after its last.
class VcsimSuite : public ::testing::Test {
 protected:
  static void SetUpTestSuite() { vcsim_ = new Vcsim(); }
  static void TearDownTestSuite() {
    delete vcsim_;
    vcsim_ = nullptr;
  }
  static inline Vcsim* vcsim_ = nullptr;
};

}  // namespace banlieue::vsphere::testing
