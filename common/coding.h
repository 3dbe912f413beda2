// Fixed-width integer encodings for keys and records on disk.
//
// Big-endian where byte order must sort like the number (LevelDB keys, stored counters), little-
// endian inside record headers. `bytes` is 1..8; the value's low `bytes` bytes are written, and
// a read returns them as an unsigned number. Header-only, no state: safe from any thread.
//
//   std::string key = "o";
//   AppendBigEndian(&key, slot, 4);              // "o" + 4 bytes, sorts by slot
//   uint32_t slot = ReadBigEndian(key.data() + 1, 4);
#pragma once

#include <cstdint>
#include <string>

namespace neardup {

inline void AppendBigEndian(std::string* out, uint64_t v, int bytes) {
  for (int b = bytes - 1; b >= 0; --b) out->push_back(static_cast<char>(v >> (8 * b)));
}

inline uint64_t ReadBigEndian(const char* p, int bytes) {
  uint64_t v = 0;
  for (int b = 0; b < bytes; ++b) v = (v << 8) | static_cast<uint8_t>(p[b]);
  return v;
}

inline void StoreBigEndian(char* p, uint64_t v, int bytes) {
  for (int b = 0; b < bytes; ++b) p[b] = static_cast<char>(v >> (8 * (bytes - 1 - b)));
}

inline void StoreLittleEndian(char* p, uint64_t v, int bytes) {
  for (int b = 0; b < bytes; ++b) p[b] = static_cast<char>(v >> (8 * b));
}

inline uint64_t LoadLittleEndian(const char* p, int bytes) {
  uint64_t v = 0;
  for (int b = bytes - 1; b >= 0; --b) v = (v << 8) | static_cast<uint8_t>(p[b]);
  return v;
}

}  // namespace neardup
