#include "host/api/machine_template_impl.h"

namespace banlieue::api {

const Fields<TemplateMeta>& TemplateMeta::describe() {
  using T = TemplateMeta;
  static const Fields<T> f =
      Fields<T>("Labels and annotations for cloned machines")
          .field("labels", &T::labels, {.description = "Labels every cloned machine carries"})
          .field("annotations", &T::annotations,
                 {.description = "Annotations every cloned machine carries"});
  return f;
}

}  // namespace banlieue::api
