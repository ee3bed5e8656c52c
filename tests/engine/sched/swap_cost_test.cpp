// Swap preemption's transfer cost in the cost model: stage 0 pays the swapped bytes over PCIe.
#include <gtest/gtest.h>

#include "engine/perf/cost_model.h"

namespace prima::perf {
namespace {

TEST(SwapCost, StageZeroPaysSwapBytesOverPcie) {
  plan::ParallelPlan p;
  p.pipeline_parallel = 2;
  CostModel cm(*model::model_by_name("llama-2-7b"), model::Quantization::kFP16,
               *plan::gpu_by_name("A100-SXM4-80GB"), p, Efficiency{});
  BatchShape b;
  b.add({RequestId(1), 1, 100, false, true});
  const StepCost base = cm.step(b);
  BatchShape swapped = b;
  swapped.swap_out_bytes = 2e9;
  swapped.swap_in_bytes = 1e9;
  // No PCIe bandwidth set: swaps are free (today's behaviour).
  EXPECT_DOUBLE_EQ(cm.step(swapped).stages[0].compute_s, base.stages[0].compute_s);
  cm.set_pcie_bandwidth_Bps(25e9);
  const StepCost c = cm.step(swapped);
  EXPECT_NEAR(c.stages[0].compute_s - base.stages[0].compute_s, 3e9 / 25e9, 1e-12);
  EXPECT_DOUBLE_EQ(c.stages[1].compute_s, base.stages[1].compute_s);
}

}  // namespace
}  // namespace prima::perf
