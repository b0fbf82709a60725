// The report's number formatting, by hand.
#include <gtest/gtest.h>

#include <limits>

#include "sim/report.hpp"

using pipeplan::sim::with_thousands;

TEST(Report, WithThousandsGroupsDigitsAndKeepsHugeValuesFinite) {
  EXPECT_EQ(with_thousands(0.0), "0");
  EXPECT_EQ(with_thousands(1775.4), "1,775");
  EXPECT_EQ(with_thousands(-1234567.0), "-1,234,567");
  EXPECT_EQ(with_thousands(999999999999999.0), "999,999,999,999,999");
  // A 1e-300 s step has a capacity of about 1e302 samples/s: llround of it overflowed (UBSan); it prints short now.
  EXPECT_EQ(with_thousands(1e15), "1e+15");
  EXPECT_EQ(with_thousands(3.2e302), "3.2e+302");
  EXPECT_EQ(with_thousands(-5e20), "-5e+20");
  EXPECT_EQ(with_thousands(std::numeric_limits<double>::infinity()), "unbounded");
}
