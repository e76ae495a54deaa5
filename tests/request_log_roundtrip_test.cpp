// The agent engine's requests.csv read back by `analyze`: every outcome the
// writer uses is one the reader accepts (docs/log-formats.md).
#include <gtest/gtest.h>

#include <filesystem>

#include "cli_run.hpp"

namespace retrystorm {
namespace {

using testing::run_cli;
using testing::TempDir;

// Stacked layers write `failed` rows (an outer attempt whose call below
// failed); a short horizon leaves attempts `in_flight` at the end.
TEST(RequestLogRoundTrip, AnalyzeReadsEveryOutcomeTheAgentWrites) {
  TempDir dir("request_log_roundtrip");
  std::string logs = (dir.path() / "logs").string();
  auto run =
      run_cli(dir.path(), {"run", "--preset", "primary-failover", "--set", "engine=agent", "--set",
                           "horizon_s=30", "--set", "client.stack_retries=2,2", "--log", logs});
  ASSERT_EQ(run.status, 0) << run.err;
  std::string csv = logs + "/requests.csv";
  ASSERT_TRUE(std::filesystem::exists(csv));
  auto analyze = run_cli(dir.path(), {"analyze", csv, "--format", "json"});
  EXPECT_EQ(analyze.status, 0) << analyze.err;
  EXPECT_NE(analyze.out.find("\"attempts\""), std::string::npos) << analyze.out.substr(0, 400);
}

}  // namespace
}  // namespace retrystorm
