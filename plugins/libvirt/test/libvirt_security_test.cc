// libvirt's XML is read with an XML parser (issue #25, item 7): what string scanning took for
// elements — text in a comment, in CDATA or in another tool's <metadata>, an element of the
// same name elsewhere — is not read as the facts the plugin acts on. Label `security`.
#include "plugins/libvirt/src/domain_xml.h"

#include <gtest/gtest.h>

#include <string>
#include <vector>

namespace banlieue::libvirt {
namespace {

TEST(LibvirtXmlSecurityTest, CapabilitiesInACommentOrCdataOfferNothing) {
  const std::string caps = R"(<capabilities>
  <host><cpu><arch>x86_64</arch></cpu></host>
  <!-- <guest><os_type>hvm</os_type><arch name='x86_64'><domain type='kvm'/></arch></guest> -->
  <guest>
    <os_type>hvm</os_type>
    <arch name='x86_64'><wordsize>64</wordsize><domain type='qemu'/></arch>
  </guest>
  <guest><os_type><![CDATA[<os_type>hvm</os_type>]]></os_type>
    <arch name='x86_64'><domain type='xen'/></arch></guest>
</capabilities>)";
  EXPECT_EQ(guestDomainTypes(caps, "x86_64"), std::vector<std::string>{"qemu"});
}

// A firmware that offers secure boot only as "no" does not offer it, though the readonly enum
// before it holds a "yes"; a TPM in a comment is no TPM.
TEST(LibvirtXmlSecurityTest, DomainCapabilitiesAreReadWhereLibvirtPutsThem) {
  const DomainCapabilities offered = readDomainCapabilities(R"(<domainCapabilities>
  <os supported='yes'>
    <enum name='firmware'><value>efi</value></enum>
    <loader supported='yes'>
      <enum name='readonly'><value>yes</value><value>no</value></enum>
      <enum name='secure'><value>no</value></enum>
    </loader>
  </os>
  <devices><!-- <tpm supported='yes'/> --><tpm supported='no'/></devices>
</domainCapabilities>)");
  EXPECT_TRUE(offered.efi);
  EXPECT_FALSE(offered.secure_boot);
  EXPECT_FALSE(offered.tpm);
  EXPECT_FALSE(
      hostCpuVirtualization("<capabilities><host><cpu><arch>x86_64</arch><model>qemu64</model>"
                            "<!-- <feature name='vmx'/> --></cpu></host></capabilities>"));
}

// The volumes a domain uses decide what finalize deletes: a <source> another tool keeps in the
// domain's <metadata> (its own namespace) is not a disk of the domain.
TEST(LibvirtXmlSecurityTest, OnlyTheDomainsDisksNameItsVolumes) {
  const std::string domain = R"(<domain type='kvm'><name>vm</name>
  <metadata>
    <other:note xmlns:other='https://example.com/x'>
      <source pool='default' volume='vm-disk-keep'/>
    </other:note>
  </metadata>
  <devices>
    <disk type='volume' device='disk'><source pool='default' volume='vm-disk-root'/></disk>
  </devices>
</domain>)";
  const auto volumes = domainPoolVolumes(domain);
  ASSERT_EQ(volumes.size(), 1u);
  EXPECT_EQ(volumes[0].pool, "default");
  EXPECT_EQ(volumes[0].volume, "vm-disk-root");

  EXPECT_EQ(declaredVolumeFormat("<volume><name>a</name>"
                                 "<!-- <target><format type='raw'/></target> -->"
                                 "<target><path>/p</path><format type='qcow2'/></target></volume>"),
            "qcow2");
}

}  // namespace
}  // namespace banlieue::libvirt
