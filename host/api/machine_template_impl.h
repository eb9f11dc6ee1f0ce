// Field declarations of machine_template.h, for the infra kinds' sources.
#pragma once

#include "host/api/declare.h"
#include "host/api/machine_template.h"

namespace banlieue::api {

template <class MachineSpec>
const Fields<MachineTemplateResource<MachineSpec>>&
MachineTemplateResource<MachineSpec>::describe() {
  using T = MachineTemplateResource<MachineSpec>;
  static const Fields<T> f =
      Fields<T>("What each machine cloned from this template gets")
          .field("metadata", &T::metadata,
                 {.description = "Labels and annotations of each machine"})
          .field("spec", &T::spec, {.description = "The spec of each machine", .required = true});
  return f;
}

template <class MachineSpec>
const Fields<MachineTemplateSpec<MachineSpec>>& MachineTemplateSpec<MachineSpec>::describe() {
  using T = MachineTemplateSpec<MachineSpec>;
  static const Fields<T> f =
      Fields<T>("Machines that CAPI clones from this template")
          .field("template", &T::template_,
                 {.description = "What each cloned machine gets", .required = true});
  return f;
}

}  // namespace banlieue::api
