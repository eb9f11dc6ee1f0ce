#include "host/api/machine_template_impl.h"

namespace banlieue::api {

const Fields<TemplateMeta>& TemplateMeta::describe() {
  using T = TemplateMeta;
  static const Fields<T> f = Fields<T>("Labels and annotations for cloned machines")
                                 .field("labels", &T::labels)
                                 .field("annotations", &T::annotations);
  return f;
}

}  // namespace banlieue::api
