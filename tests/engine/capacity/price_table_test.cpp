// The price and power table (engine/capacity/price_table.h): the shipped table covers every
// GPU type prima knows (so a plan with the default table never lacks an entry), its entries
// hold (idle <= peak, prices > 0, sources given), and the power model's arithmetic.
#include "engine/capacity/price_table.h"

#include <gtest/gtest.h>

#include "engine/plan/topology.h"

namespace prima::capacity {
namespace {

TEST(PriceTable, TheShippedTableCoversEveryGpuTypeWithSourcedFigures) {
  auto t = load_price_table();
  ASSERT_TRUE(t.ok()) << t.status().message();
  EXPECT_EQ(t->file, "topologies/prices.json");
  for (const auto& gpu : plan::gpu_names()) {
    ASSERT_TRUE(t->gpus.count(gpu)) << gpu;
    const GpuEconomics& e = t->gpus.at(gpu);
    EXPECT_GT(e.price_per_gpu_hour, 0) << gpu;
    EXPECT_GT(e.peak_watts, e.idle_watts) << gpu;
    EXPECT_GT(e.idle_watts, 0) << gpu;
    EXPECT_FALSE(e.price_source.empty()) << gpu;
    EXPECT_FALSE(e.power_source.empty()) << gpu;
  }
  // The datasheets' board power.
  EXPECT_EQ(t->gpus.at("A100-SXM4-80GB").peak_watts, 400);
  EXPECT_EQ(t->gpus.at("H100-SXM5-80GB").peak_watts, 700);
  EXPECT_EQ(t->gpus.at("H200-SXM-141GB").peak_watts, 700);
}

TEST(PriceTable, PowerIsLinearInTheBusyFractionAndEnergyIsPerOutputToken) {
  GpuEconomics e;
  e.idle_watts = 100;
  e.peak_watts = 700;
  EXPECT_DOUBLE_EQ(gpu_power_watts(e, 0), 100);
  EXPECT_DOUBLE_EQ(gpu_power_watts(e, 0.5), 400);
  EXPECT_DOUBLE_EQ(gpu_power_watts(e, 1), 700);
  EXPECT_DOUBLE_EQ(gpu_power_watts(e, 1.7), 700);  // clamped
  EXPECT_DOUBLE_EQ(gpu_power_watts(e, -1), 100);
  // 8 GPUs at 400 W = 3,200 W; 1,000 tokens/s: 3.2 J per token, 3.2e6 J per million tokens
  // = 0.888... kWh.
  EXPECT_DOUBLE_EQ(energy_kwh_per_million_tokens(8 * gpu_power_watts(e, 0.5), 1000),
                   3200.0 / 1000 * 1e6 / 3.6e6);
  EXPECT_EQ(energy_kwh_per_million_tokens(3200, 0), 0);
}

TEST(PriceTable, AMissingFileIsNotFound) {
  auto t = load_price_table("/nonexistent/prices.json");
  ASSERT_FALSE(t.ok());
  EXPECT_EQ(t.status().code(), StatusCode::kNotFound);
  EXPECT_NE(t.status().message().find("/nonexistent/prices.json: no such price table"),
            std::string::npos);
}

}  // namespace
}  // namespace prima::capacity
