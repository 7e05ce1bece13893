// Runs the ByteBuf fuzz target on deterministic pseudo-random programs.
#include <cstddef>
#include <cstdint>
#include <random>
#include <vector>

#include "gtest/gtest.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size);

namespace gyre {
namespace {

TEST(ByteBufFuzzTest, RandomPrograms) {
  std::mt19937 rng(12345);
  for (int i = 0; i < 2000; ++i) {
    std::vector<uint8_t> input(rng() % 400);
    for (uint8_t& b : input) b = static_cast<uint8_t>(rng());
    ASSERT_EQ(LLVMFuzzerTestOneInput(input.data(), input.size()), 0);
  }
}

TEST(ByteBufFuzzTest, EmptyInput) { EXPECT_EQ(LLVMFuzzerTestOneInput(nullptr, 0), 0); }

}  // namespace
}  // namespace gyre
