// core/simulate.hpp in a build on a real MPI: the compute mode's parser refuses skip (it exists
// only in the SMPI build) and unknown values, naming the option; Storage in ComputeMode::Run
// behaves as an owned buffer (copies are independent, moves empty the source).
#include <gtest/gtest.h>

#include <string>

#include "tessel/core/error.hpp"
#include "tessel/core/simulate.hpp"

using tessel::ComputeMode;
using tessel::InputError;
using tessel::Storage;

namespace {
std::string message_of(const std::string& value) {
  try {
    tessel::parse_compute_mode(value, "--simulate-compute");
  } catch (const InputError& e) { return e.what(); }
  return "";
}
}  // namespace

TEST(ComputeMode, RunParsesSkipAndUnknownValuesThrow) {
  EXPECT_EQ(tessel::parse_compute_mode("run", "--simulate-compute"), ComputeMode::Run);
  EXPECT_EQ(tessel::to_string(ComputeMode::Run), "run");
  EXPECT_EQ(tessel::to_string(ComputeMode::Skip), "skip");
  const std::string bad = message_of("later");
  EXPECT_NE(bad.find("--simulate-compute 'later'"), std::string::npos) << bad;
  EXPECT_NE(bad.find("run or skip"), std::string::npos) << bad;
  ASSERT_FALSE(tessel::kSimulatedMpi);  // this test binary is not built in the SMPI build
  const std::string skip = message_of("skip");
  EXPECT_NE(skip.find("--simulate-compute skip"), std::string::npos) << skip;
  EXPECT_NE(skip.find("SMPI"), std::string::npos) << skip;
}

TEST(ComputeMode, RunStorageIsAnOwnedBuffer) {
  Storage<double> a(ComputeMode::Run, 5);
  ASSERT_EQ(a.size(), 5u);
  for (std::size_t i = 0; i < 5; ++i) a.data()[i] = static_cast<double>(i);
  Storage<double> b(a);  // a copy owns its own contents
  b.data()[0] = 42;
  EXPECT_EQ(a.data()[0], 0.0);
  EXPECT_EQ(b.data()[4], 4.0);
  EXPECT_NE(a.data(), b.data());
  Storage<double> c(std::move(a));
  EXPECT_TRUE(a.empty());  // NOLINT(bugprone-use-after-move): moved-from is documented empty
  EXPECT_EQ(c.size(), 5u);
  EXPECT_EQ(c.data()[3], 3.0);
  c.clear();
  EXPECT_TRUE(c.empty());
}
