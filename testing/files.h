// Reading a whole file in a test (outputs compared byte for byte).
#pragma once

#include <fstream>
#include <sstream>
#include <string>

namespace neardup::test {

// The file's bytes; empty when it cannot be read.
inline std::string ReadFile(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  std::stringstream ss;
  ss << in.rdbuf();
  return ss.str();
}

}  // namespace neardup::test
