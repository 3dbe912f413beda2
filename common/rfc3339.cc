#include "common/rfc3339.h"

#include <cstdio>

namespace neardup {

std::optional<int64_t> ParseRfc3339(std::string_view s) {
  auto digits = [&](size_t pos, size_t n, int* v) {
    if (pos + n > s.size()) return false;
    int x = 0;
    for (size_t i = pos; i < pos + n; ++i) {
      if (s[i] < '0' || s[i] > '9') return false;
      x = x * 10 + (s[i] - '0');
    }
    *v = x;
    return true;
  };
  int Y, M, D, h, m, sec;
  if (!digits(0, 4, &Y) || s.size() < 20 || s[4] != '-' || !digits(5, 2, &M) || s[7] != '-' ||
      !digits(8, 2, &D) || (s[10] != 'T' && s[10] != 't' && s[10] != ' ') || !digits(11, 2, &h) ||
      s[13] != ':' || !digits(14, 2, &m) || s[16] != ':' || !digits(17, 2, &sec)) {
    return std::nullopt;
  }
  static const int kDays[] = {31, 29, 31, 30, 31, 30, 31, 31, 30, 31, 30, 31};
  if (M < 1 || M > 12 || D < 1 || D > kDays[M - 1] || h > 23 || m > 59 || sec > 60) return std::nullopt;
  size_t pos = 19;
  int64_t ms = 0;
  if (pos < s.size() && s[pos] == '.') {
    ++pos;
    size_t start = pos;
    int64_t scale = 100;
    while (pos < s.size() && s[pos] >= '0' && s[pos] <= '9') {
      ms += (s[pos] - '0') * scale;
      scale /= 10;
      ++pos;
    }
    if (pos == start) return std::nullopt;
  }
  int64_t offset_min = 0;
  if (pos < s.size() && (s[pos] == 'Z' || s[pos] == 'z')) {
    ++pos;
  } else if (pos < s.size() && (s[pos] == '+' || s[pos] == '-')) {
    int oh, om;
    if (!digits(pos + 1, 2, &oh) || pos + 3 >= s.size() || s[pos + 3] != ':' || !digits(pos + 4, 2, &om) ||
        oh > 23 || om > 59) {
      return std::nullopt;
    }
    offset_min = (oh * 60 + om) * (s[pos] == '+' ? 1 : -1);
    pos += 6;
  } else {
    return std::nullopt;
  }
  if (pos != s.size()) return std::nullopt;
  const int64_t days = DaysFromCivil(Y, static_cast<unsigned>(M), static_cast<unsigned>(D));
  const int64_t secs = days * 86400 + h * 3600 + m * 60 + sec - offset_min * 60;
  return secs * 1000 + ms;
}

void AppendRfc3339(std::string* out, int64_t unix_seconds) {
  const int64_t days = unix_seconds >= 0 ? unix_seconds / 86400 : (unix_seconds - 86399) / 86400;
  const int64_t sod = unix_seconds - days * 86400;
  const int64_t z = days + 719468;
  const int64_t era = (z >= 0 ? z : z - 146096) / 146097;
  const unsigned doe = static_cast<unsigned>(z - era * 146097);
  const unsigned yoe = (doe - doe / 1460 + doe / 36524 - doe / 146096) / 365;
  const unsigned doy = doe - (365 * yoe + yoe / 4 - yoe / 100);
  const unsigned mp = (5 * doy + 2) / 153;
  const unsigned d = doy - (153 * mp + 2) / 5 + 1;
  const unsigned m = mp < 10 ? mp + 3 : mp - 9;
  const int64_t y = static_cast<int64_t>(yoe) + era * 400 + (m <= 2);
  char buf[40];
  const int n = std::snprintf(buf, sizeof buf, "%04d-%02u-%02uT%02u:%02u:%02uZ", static_cast<int>(y), m, d,
                              static_cast<unsigned>(sod / 3600), static_cast<unsigned>(sod / 60 % 60),
                              static_cast<unsigned>(sod % 60));
  out->append(buf, static_cast<size_t>(n));
}

}  // namespace neardup
