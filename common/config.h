// Configuration: Protobuf text format files checked against proto/config.proto.
//
//   ASSIGN_OR_RETURN(pb::NeardupConfig cfg, LoadConfig("configs/embedded.textproto"));
//
// Every field left out gets its documented default (config.proto). Errors name the file, the
// line and column, and the field:
//   configs/x.textproto:4:3: shingle.k: must be in 1..16 (got 40)
//   configs/x.textproto:2:5: Message type "neardup.pb.ShingleConfig" has no field named "kk".
//
// Thread safety: pure functions.
#pragma once

#include <string>
#include <string_view>

#include "common/status.h"
#include "proto/config.pb.h"

namespace neardup {

// Reads and validates a config file. IoError if it cannot be read; InvalidArgument for syntax,
// unknown fields, wrong types and out-of-range values.
// `as_written`, when given, receives the file's fields as set there, before the defaults (so a
// caller can tell a value given in the file from a default).
StatusOr<pb::NeardupConfig> LoadConfig(const std::string& path, pb::NeardupConfig* as_written = nullptr);

// Parses config text; `name` is used in error messages in place of a file name.
StatusOr<pb::NeardupConfig> ParseConfig(std::string_view text, const std::string& name,
                                        pb::NeardupConfig* as_written = nullptr);

// The configuration with every default filled in (what an empty file means).
pb::NeardupConfig DefaultConfig();

}  // namespace neardup
