// The *MachineTemplate shape CAPI MachineDeployments clone machines from:
// spec.template.{metadata, spec}.
#pragma once

#include "host/api/common.h"

namespace banlieue::api {

struct TemplateMeta {
  StringMap labels;
  StringMap annotations;
  static const Fields<TemplateMeta>& describe();
};

template <class MachineSpec>
struct MachineTemplateResource {
  TemplateMeta metadata;
  MachineSpec spec;
  static const Fields<MachineTemplateResource>& describe();
};

template <class MachineSpec>
struct MachineTemplateSpec {
  MachineTemplateResource<MachineSpec> template_;
  static const Fields<MachineTemplateSpec>& describe();
};

}  // namespace banlieue::api
