#include "common/coding.h"

#include <gtest/gtest.h>

#include <string>

namespace neardup {
namespace {

TEST(Coding, BigEndianRoundTripsAndSortsLikeTheNumber) {
  std::string a, b;
  AppendBigEndian(&a, 0x0102, 4);
  AppendBigEndian(&b, 0x0201, 4);
  EXPECT_EQ(a, std::string("\x00\x00\x01\x02", 4));
  EXPECT_LT(a, b);
  EXPECT_EQ(ReadBigEndian(a.data(), 4), 0x0102u);
  std::string c;
  AppendBigEndian(&c, 0xFEDCBA9876543210ull, 8);
  EXPECT_EQ(ReadBigEndian(c.data(), 8), 0xFEDCBA9876543210ull);
  EXPECT_EQ(static_cast<uint8_t>(c[0]), 0xFE);
}

TEST(Coding, LittleEndianRoundTrips) {
  char buf[8];
  StoreLittleEndian(buf, 0x11223344, 4);
  EXPECT_EQ(static_cast<uint8_t>(buf[0]), 0x44);
  EXPECT_EQ(LoadLittleEndian(buf, 4), 0x11223344u);
  StoreLittleEndian(buf, 0x8877665544332211ull, 8);
  EXPECT_EQ(LoadLittleEndian(buf, 8), 0x8877665544332211ull);
}

}  // namespace
}  // namespace neardup
