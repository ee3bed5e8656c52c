// The two axes against their data: the built-in hardware profiles against the microbenchmarks
// they are fitted to (data/calibration/microbenchmarks.json; the error they record is what
// they measure), and the engine Splitwise measured (splitwise-2023 on those profiles) against
// the Splitwise step times (data/calibration/published.json: median within 5%, every point
// within 10%), the shapes they show, and the held-out Splitwise figures
// (data/calibration/splitwise-grid.json), which nothing is fitted to.
#include "engine/perf/calibration_set.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>

#include "engine/perf/cost_model.h"
#include "engine/perf/engine_profile.h"

namespace prima::perf {
namespace {

const std::vector<CalibrationPoint>& points() {
  static const auto p =
      *load_calibration_points(PRIMA_SOURCE_DIR "/data/calibration/published.json");
  return p;
}

const std::vector<CalibrationPoint>& micro() {
  static const auto p =
      *load_calibration_points(PRIMA_SOURCE_DIR "/data/calibration/microbenchmarks.json");
  return p;
}

Efficiency hardware(const std::string& gpu) {
  const Profile* p = builtin_profile(gpu);
  EXPECT_NE(p, nullptr) << gpu;
  return p ? p->efficiency : Efficiency{};
}

// The hardware with the engine Splitwise measured.
Efficiency builtin(const std::string& gpu) {
  return merge_axes(hardware(gpu), *builtin_engine("splitwise-2023"), gpu);
}

const CalibrationPoint& point(const std::string& id) {
  for (const auto& p : points())
    if (p.id == id) return p;
  ADD_FAILURE() << "no point " << id;
  return points().front();
}

TEST(CalibrationSet, LoadsEveryPoint) {
  ASSERT_EQ(points().size(), 54u);
  std::set<std::string> gpus;
  for (const auto& p : points()) {
    EXPECT_GT(p.measured_s, 0) << p.id;
    gpus.insert(p.gpu.name);
  }
  EXPECT_EQ(gpus, (std::set<std::string>{"A100-SXM4-80GB", "H100-SXM5-80GB", "H200-SXM-141GB"}));
  // busbw converts to time: C1 8 GB at 478.9 GB/s, 2(p-1)/p = 1.75.
  EXPECT_NEAR(point("C1 H100 all-reduce 8 GPUs 8 GB").measured_s, 8589934592.0 * 1.75 / 478.9e9,
              1e-9);
}

// splitwise-2023 on the microbenchmark-fitted hardware reproduces every Splitwise step time.
TEST(CalibrationSet, SplitwiseEngineReproducesTheSplitwiseSet) {
  std::vector<CalibrationPoint> steps;
  for (const auto& p : points())
    if (p.kind == CalibrationPoint::kStep) steps.push_back(p);
  ASSERT_EQ(steps.size(), 26u);
  for (const std::string gpu : {"A100-SXM4-80GB", "H100-SXM5-80GB"}) {
    const Evaluation ev = evaluate_points(steps, gpu, builtin);
    EXPECT_LE(ev.fidelity.median_abs_error, 0.05) << gpu;
    for (const auto& r : ev.points)
      EXPECT_LE(std::fabs(r.error), 0.10) << r.point->id << " predicted " << r.predicted_s
                                          << " s, measured " << r.point->measured_s << " s";
  }
}

// The hardware profiles on their microbenchmarks: median within 8%; the worst (small GEMMs the
// roofline and a fixed kernel time describe only roughly) within 40%.
TEST(CalibrationSet, HardwareProfilesMeetTheirMicrobenchmarks) {
  for (const std::string gpu : {"A100-SXM4-80GB", "H100-SXM5-80GB", "H200-SXM-141GB"}) {
    const Evaluation ev = evaluate_points(micro(), gpu, hardware);
    EXPECT_LE(ev.fidelity.median_abs_error, 0.08) << gpu;
    for (const auto& r : ev.points) EXPECT_LE(std::fabs(r.error), 0.40) << r.point->id;
  }
}

TEST(CalibrationSet, ProfilesRecordTheErrorTheyMeasure) {
  for (const std::string gpu : {"A100-SXM4-80GB", "H100-SXM5-80GB", "H200-SXM-141GB"}) {
    const Profile* p = builtin_profile(gpu);
    ASSERT_NE(p, nullptr);
    const Evaluation ev = evaluate_points(micro(), gpu, hardware);
    EXPECT_TRUE(p->fidelity.calibrated);
    EXPECT_EQ(p->fidelity.points, ev.fidelity.points) << gpu;
    EXPECT_NEAR(p->fidelity.median_abs_error, ev.fidelity.median_abs_error, 1e-9) << gpu;
    EXPECT_NEAR(p->fidelity.max_abs_error, ev.fidelity.max_abs_error, 1e-9) << gpu;
    EXPECT_TRUE(check_efficiency(p->efficiency).empty()) << check_efficiency(p->efficiency);
  }
}

double predict(const std::string& id) {
  const CalibrationPoint& p = point(id);
  return predict_point(p, builtin(p.gpu.name));
}

TEST(CalibrationShapes, DecodeStepGrowsWithBatchAsMeasured) {
  for (const std::string g : {"H100", "A100"}) {
    const std::string src = g == "H100" ? "S1" : "S2";
    const std::string p1 = src + " llama-2-70b " + g + " TP8 decode bs1";
    const std::string p64 = src + " llama-2-70b " + g + " TP8 decode bs64";
    const double measured = point(p64).measured_s - point(p1).measured_s;  // 20.3 / 26.4 ms
    const double predicted = predict(p64) - predict(p1);
    EXPECT_NEAR(predicted, measured, 0.2 * measured) << g;
  }
}

TEST(CalibrationShapes, Tp8DecodeIsNotSlowerThanTp4) {
  for (const std::string g : {"H100", "A100"}) {
    for (const std::string bs : {"bs1", "bs64"}) {
      const std::string src8 = g == "H100" ? "S1" : "S2";
      const double tp8 = predict(src8 + " llama-2-70b " + g + " TP8 decode " + bs);
      const double tp4 = predict("S3 llama-2-70b " + g + " TP4 decode " + bs);
      EXPECT_LE(tp8, tp4 * 1.001) << g << " " << bs;
    }
  }
}

// Measured: 6.2x (H100), 5.6x (A100); the fused-attention hardware of the microbenchmarks with
// the Splitwise engine's score traffic gives 4.8x-6.5x.
TEST(CalibrationShapes, LongPrefillCostsFiveToSixAndAHalfTimesAShortOne) {
  for (const std::string g : {"H100", "A100"}) {
    const std::string src = g == "H100" ? "S1" : "S2";
    const double r = predict(src + " llama-2-70b " + g + " TP8 prefill 8192 tok") /
                     predict(src + " llama-2-70b " + g + " TP8 prefill 2048 tok");
    EXPECT_GE(r, 4.7) << g;
    EXPECT_LE(r, 6.5) << g;
  }
}

}  // namespace
}  // namespace prima::perf

namespace prima::perf {
namespace {

// The held-out check: 226 Splitwise figures the profiles were not fitted to (TP 2, other
// prompt lengths, batch and context sweeps). Pinned at what the profiles reach, so that a
// refit that fits the calibration set better but generalises worse fails here.
TEST(CalibrationHeldOut, SplitwiseGridWithinItsRecordedError) {
  const auto grid =
      *load_calibration_points(PRIMA_SOURCE_DIR "/data/calibration/splitwise-grid.json");
  ASSERT_EQ(grid.size(), 226u);
  std::vector<double> single, decode;
  for (const auto& p : grid) {
    const double e = std::fabs(predict_point(p, builtin(p.gpu.name)) / p.measured_s - 1);
    if (p.prefill && p.batch == 1) single.push_back(e);
    if (!p.prefill) decode.push_back(e);
  }
  auto median = [](std::vector<double> v) {
    std::sort(v.begin(), v.end());
    return v[v.size() / 2];
  };
  auto share_within = [](const std::vector<double>& v, double tol) {
    return double(std::count_if(v.begin(), v.end(), [&](double e) { return e <= tol; })) / v.size();
  };
  // Decode steps: batch 1-32, contexts 192-8,256, TP 2/4/8 (median 4.8%, 77% within 10%,
  // worst 15.5%).
  EXPECT_LE(median(decode), 0.05);
  EXPECT_GE(share_within(decode, 0.10), 0.75);
  EXPECT_GE(share_within(decode, 0.16), 1.0);
  // One prompt of 128-8,192 tokens at TP 2/4/8 (median 5.3%); short prompts at TP4-TP8 stay
  // the worst (within 41%).
  EXPECT_LE(median(single), 0.08);
  EXPECT_GE(share_within(single, 0.41), 1.0);
}

}  // namespace
}  // namespace prima::perf
