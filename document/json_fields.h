// The fields of a JSON Lines record (simdjson's DOM), as the record readers check them: crawl
// records (document/crawl_reader.h) and email records (email/templates/email_reader.h). Errors are
// InvalidArgument naming the field and the problem, never the field's content.
#pragma once

#include <simdjson.h>

#include <string>

#include "common/status.h"

namespace neardup {

// "field '<field>' <what>".
Status JsonFieldError(const char* field, const char* what);
// A string field into *out; *present tells whether it was there (null counts as absent). Error:
// a value that is not a string.
Status OptionalJsonString(simdjson::dom::object& obj, const char* field, std::string* out, bool* present);
// As OptionalJsonString, and "missing required field '<field>'" when it is absent.
Status RequiredJsonString(simdjson::dom::object& obj, const char* field, std::string* out);

}  // namespace neardup
