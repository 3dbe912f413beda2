#include "document/json_fields.h"

namespace neardup {

Status JsonFieldError(const char* field, const char* what) {
  return InvalidArgument(std::string("field '") + field + "' " + what);
}

Status OptionalJsonString(simdjson::dom::object& obj, const char* field, std::string* out, bool* present) {
  simdjson::dom::element e;
  *present = false;
  if (obj[field].get(e) != simdjson::SUCCESS || e.is_null()) return Status::Ok();
  std::string_view v;
  if (e.get_string().get(v) != simdjson::SUCCESS) return JsonFieldError(field, "must be a string");
  out->assign(v);
  *present = true;
  return Status::Ok();
}

Status RequiredJsonString(simdjson::dom::object& obj, const char* field, std::string* out) {
  bool present = false;
  RETURN_IF_ERROR(OptionalJsonString(obj, field, out, &present));
  if (!present) return InvalidArgument(std::string("missing required field '") + field + "'");
  return Status::Ok();
}

}  // namespace neardup
