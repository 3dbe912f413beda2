// RFC 3339 date-times: parsing what crawlers write, formatting what neardup writes (UTC).
//
// Thread safety: pure functions.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>

namespace neardup {

// Days since 1970-01-01 of a proleptic Gregorian date (H. Hinnant's algorithm).
constexpr int64_t DaysFromCivil(int64_t y, unsigned m, unsigned d) {
  y -= m <= 2;
  const int64_t era = (y >= 0 ? y : y - 399) / 400;
  const unsigned yoe = static_cast<unsigned>(y - era * 400);
  const unsigned doy = (153 * (m + (m > 2 ? -3 : 9)) + 2) / 5 + d - 1;
  const unsigned doe = yoe * 365 + yoe / 4 - yoe / 100 + doy;
  return era * 146097 + static_cast<int64_t>(doe) - 719468;
}

// Parses "2024-06-03T00:09:48Z", "...48.25+02:00" and the like into milliseconds since the epoch;
// nullopt if malformed (no zone, impossible date, trailing characters).
std::optional<int64_t> ParseRfc3339(std::string_view s);

// Appends "YYYY-MM-DDTHH:MM:SSZ" for a time in whole seconds since the epoch.
void AppendRfc3339(std::string* out, int64_t unix_seconds);

}  // namespace neardup
