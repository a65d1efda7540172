#include "base/strings.h"

#include <gtest/gtest.h>

namespace mtplx {
namespace {

TEST(ParseByteSizeTest, UnitsAsPeopleWriteThem) {
  uint64_t b = 0;
  ASSERT_TRUE(ParseByteSize("8G", &b));
  EXPECT_EQ(b, uint64_t{8} << 30);
  ASSERT_TRUE(ParseByteSize("1.5GiB", &b));
  EXPECT_EQ(b, uint64_t{3} << 29);
  ASSERT_TRUE(ParseByteSize("512m", &b));
  EXPECT_EQ(b, uint64_t{512} << 20);
  ASSERT_TRUE(ParseByteSize(" 640 KB ", &b));
  EXPECT_EQ(b, uint64_t{640} << 10);
  ASSERT_TRUE(ParseByteSize("300", &b));  // MiB
  EXPECT_EQ(b, uint64_t{300} << 20);
  ASSERT_TRUE(ParseByteSize("4096B", &b));
  EXPECT_EQ(b, 4096u);
  ASSERT_TRUE(ParseByteSize("2T", &b));
  EXPECT_EQ(b, uint64_t{2} << 40);
  for (const char* bad : {"", "G", "-1G", "1.2.3G", "8X", "8GG", "nan", "1e3M", ".", "9999999T"})
    EXPECT_FALSE(ParseByteSize(bad, &b)) << bad;
}

}  // namespace
}  // namespace mtplx
