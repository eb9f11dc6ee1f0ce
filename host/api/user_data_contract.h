// How userData reaches a backend (docs/adr/0026), shared by the controller, which writes it, and
// the provider runtime, which reads it: a Secret opts in to being a VM's userData by a label;
// the controller renders it into a Secret of the VM's own; the infrastructure object names that
// Secret and its revision in annotations, never the text.
#pragma once

namespace banlieue::api {

// The label, with value "true", a Secret must carry to be used as a VirtualMachine's userData.
inline constexpr const char* kUserDataOptInLabel = "banlieue.io/user-data";
// The type and key of the Secret holding a VM's rendered userData (controller-owned by the VM).
inline constexpr const char* kRenderedUserDataType = "banlieue.io/rendered-user-data";
inline constexpr const char* kRenderedUserDataKey = "userData";
// On the infrastructure object: the rendered Secret's name, and its resourceVersion.
inline constexpr const char* kUserDataSecretAnnotation = "banlieue.io/user-data-secret";
inline constexpr const char* kUserDataRevisionAnnotation = "banlieue.io/user-data-revision";

// Cluster API's bootstrap data (docs/adr/0050): the controller names a Machine's data Secret in
// the annotations above and adds this one with the key Cluster API keeps the data in
// (capi_contract.h: kBootstrapDataKey).
inline constexpr const char* kUserDataKeyAnnotation = "banlieue.io/user-data-key";

// The RoleBinding bootstrap makes in each namespace where the controller may read userData
// (--userdata-namespace). Its presence is how the operator knows a namespace uses userData, and
// only there does a provider get the right to read Secrets by any name (its VMs' rendered
// userData); elsewhere it reads its own credentials and CA Secrets only.
inline constexpr const char* kUserDataRoleBinding = "banlieue-controller-userdata";

}  // namespace banlieue::api
