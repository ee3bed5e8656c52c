// Calibration tables: defaults, per-GPU overrides, strict keys.
#include "engine/perf/calibration.h"

#include <gtest/gtest.h>

namespace prima::perf {
namespace {

TEST(Calibration, DefaultsAndPerGpuOverrides) {
  config::Json j = config::Json::parse(R"({
    "source": "prima profile on a lent H200",
    "defaults": {"gemm_compute": 0.7, "p2p_latency_s": "2ms"},
    "gpus": {"H200-SXM-141GB": {"gemm_compute": 0.8, "gemm_memory": 0.9}}
  })");
  const Calibration c = parse_calibration(config::JsonReader(j, "cal.json"));
  EXPECT_DOUBLE_EQ(c.defaults.gemm_compute, 0.7);
  EXPECT_DOUBLE_EQ(c.defaults.p2p_latency_s, 2e-3);
  EXPECT_DOUBLE_EQ(c.defaults.gemm_memory, Efficiency{}.gemm_memory);
  const Efficiency& h = c.for_gpu("H200-SXM-141GB");
  EXPECT_DOUBLE_EQ(h.gemm_compute, 0.8);
  EXPECT_DOUBLE_EQ(h.gemm_memory, 0.9);
  EXPECT_DOUBLE_EQ(h.p2p_latency_s, 2e-3);  // inherits the file's defaults
  EXPECT_DOUBLE_EQ(c.for_gpu("A100-SXM4-80GB").gemm_compute, 0.7);
}

TEST(Calibration, StrictKeysAndRanges) {
  config::Json typo = config::Json::parse(R"({"defaults": {"gemm_comput": 0.7}})");
  try {
    parse_calibration(config::JsonReader(typo, "cal.json"));
    FAIL();
  } catch (const config::ConfigError& e) {
    EXPECT_NE(std::string(e.what()).find("cal.json: /defaults/gemm_comput: unknown field"),
              std::string::npos)
        << e.what();
  }
  config::Json zero = config::Json::parse(R"({"defaults": {"gemm_memory": 0}})");
  EXPECT_THROW(parse_calibration(config::JsonReader(zero, "cal.json")), config::ConfigError);
  EXPECT_FALSE(load_calibration_file("/nonexistent/cal.json").ok());
}

}  // namespace
}  // namespace prima::perf
