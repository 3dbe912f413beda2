// Configuration: Protobuf text format files checked against proto/config.proto.
//
//   ASSIGN_OR_RETURN(pb::NeardupConfig cfg, LoadConfig("configs/embedded.textproto"));
//
// Every field left out gets its default, and every field given is checked against its range: both
// are declared once, as field options in proto/config.proto ([(default_value) = "0.8", (min) = 0,
// (min_exclusive) = true, (max) = 1]), and read here by reflection. Options structs that mirror a
// section take their defaults from ConfigDefaults(), and code checking such options outside a file
// takes the bounds from ConfigRangeError(), so that no default or bound is written twice.
//
// Errors name the file, the line and column, and the field:
//   configs/x.textproto:4:3: shingle.k: must be in 1..16 (got 40)
//   configs/x.textproto:2:5: Message type "neardup.pb.ShingleConfig" has no field named "kk".
//
// Thread safety: pure functions (ConfigDefaults() is built once, on first use).
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

// The configuration with every default filled in (what an empty file means), built once from
// config.proto's (default_value) options. In-class defaults of options structs read it:
//   double min_threshold = ConfigDefaults().tier2().min_threshold();
const pb::NeardupConfig& ConfigDefaults();

// A copy of ConfigDefaults().
pb::NeardupConfig DefaultConfig();

// The fields below name a field by its path from NeardupConfig, "section.field" (e.g.
// "tier2.prefix_overlap"); a path naming no field of config.proto is a programming error and
// aborts.

// The range config.proto declares for the field, as errors word it: "in 1..64", "in (0, 1]",
// "at least 1"; empty when the field declares none.
std::string ConfigRange(std::string_view path);

// Empty when `value` lies in that range (or there is none); else the rule it breaks, e.g.
// "must be in 1..64". Options checked outside a config file use it with their own wording:
//   if (auto rule = ConfigRangeError("tier2.prefix_overlap", c); !rule.empty())
//     return InvalidArgument("shard: prefix_overlap " + rule + ", got " + std::to_string(c));
std::string ConfigRangeError(std::string_view path, double value);

// The field's declared default as written in config.proto, e.g. "0.9" (for help texts).
std::string ConfigDefaultText(std::string_view path);

}  // namespace neardup
