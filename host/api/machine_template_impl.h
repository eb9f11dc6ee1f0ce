// Field declarations of machine_template.h, for the infra kinds' sources.
#pragma once

#include "host/api/declare.h"
#include "host/api/machine_template.h"

namespace banlieue::api {

template <class MachineSpec>
const Fields<MachineTemplateResource<MachineSpec>>&
MachineTemplateResource<MachineSpec>::describe() {
  using T = MachineTemplateResource<MachineSpec>;
  static const Fields<T> f = Fields<T>("What each machine cloned from this template gets")
                                 .field("metadata", &T::metadata)
                                 .field("spec", &T::spec, {.required = true});
  return f;
}

template <class MachineSpec>
const Fields<MachineTemplateSpec<MachineSpec>>& MachineTemplateSpec<MachineSpec>::describe() {
  using T = MachineTemplateSpec<MachineSpec>;
  static const Fields<T> f = Fields<T>().field("template", &T::template_, {.required = true});
  return f;
}

}  // namespace banlieue::api
