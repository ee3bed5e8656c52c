// Loading and predicting the calibration set (calibration_set.h).
#include "engine/perf/calibration_set.h"

#include <fmt/format.h>
#include <fmt/ranges.h>

#include <algorithm>
#include <cmath>

#include "engine/perf/cost_model.h"
#include "engine/perf/engine_profile.h"

namespace prima::perf {
namespace {

using config::JsonReader;

CalibrationPoint parse_point(const JsonReader& r) {
  CalibrationPoint p;
  p.id = r.string("id");
  p.source = r.string("source");
  if (p.source.empty())
    r.fail("source", "every point names its source (a row of the published set)");
  const std::string kind = r.one_of("kind", {"step", "allreduce", "gemm", "stream", "attention"});
  p.kind = kind == "step"        ? CalibrationPoint::kStep
           : kind == "allreduce" ? CalibrationPoint::kAllreduce
           : kind == "gemm"      ? CalibrationPoint::kGemm
           : kind == "attention" ? CalibrationPoint::kAttention
                                 : CalibrationPoint::kStream;
  auto gpu = plan::gpu_by_name(r.string("gpu"));
  if (!gpu.ok()) r.fail("gpu", gpu.status().message());
  p.gpu = *gpu;
  const JsonReader link = r.object("link");
  p.link.bandwidth_Bps = link.bandwidth_Bps("bandwidth");
  p.link.latency_s = link.duration_s("latency", 0);
  link.finish();
  if (p.kind == CalibrationPoint::kStep) {
    p.model = model::parse_model(r, "model");
    const std::string q = r.one_of("quantization", model::quantization_names(), "fp16");
    model::parse_quantization(q, &p.quantization);
    p.tensor_parallel = static_cast<int>(r.positive_integer("tensor_parallel"));
    p.prefill = r.one_of("phase", {"prefill", "decode"}) == "prefill";
    p.engine = r.string("engine", p.engine);
    if (!builtin_engine(p.engine))
      r.fail("engine", "unknown engine \"" + p.engine + "\" (known: " +
                           fmt::format("{}", fmt::join(builtin_engine_names(), ", ")) + ")");
    p.batch = static_cast<int>(r.positive_integer("batch"));
    if (p.prefill)
      p.tokens = static_cast<int>(r.positive_integer("tokens"));
    else
      p.context = static_cast<int>(r.positive_integer("context"));
    p.measured_s = r.duration_s("measured");
  } else if (p.kind == CalibrationPoint::kGemm) {
    const std::string q = r.one_of("quantization", model::quantization_names(), "fp16");
    model::parse_quantization(q, &p.quantization);
    p.m = r.positive_number("m");
    p.n = r.positive_number("n");
    p.k = r.positive_number("k");
    p.measured_s = r.has("measured") ? r.duration_s("measured")
                                     : 2 * p.m * p.n * p.k / (r.positive_number("tflops") * 1e12);
  } else if (p.kind == CalibrationPoint::kAttention) {
    // FlashAttention's convention: 4 x batch x heads x head_dim x seqlen^2 FLOPs, halved when
    // causal, over the time.
    const std::string q = r.one_of("quantization", model::quantization_names(), "fp16");
    model::parse_quantization(q, &p.quantization);
    p.heads = static_cast<int>(r.positive_integer("heads"));
    p.head_dim = static_cast<int>(r.positive_integer("head_dim"));
    p.tokens = static_cast<int>(r.positive_integer("seqlen"));
    p.batch = static_cast<int>(r.positive_integer("batch"));
    p.causal = r.boolean("causal", true);
    const double flops =
        4.0 * p.batch * p.heads * p.head_dim * double(p.tokens) * p.tokens / (p.causal ? 2 : 1);
    p.measured_s = flops / (r.positive_number("tflops") * 1e12);
  } else if (p.kind == CalibrationPoint::kStream) {
    p.bytes = 2e9;  // a 1 GB copy: read and write
    p.measured_s = p.bytes / r.bandwidth_Bps("bandwidth");
  } else {
    p.ranks = static_cast<int>(r.positive_integer("ranks"));
    p.oneshot = r.one_of("algorithm", {"nccl", "oneshot"}, "nccl") == "oneshot";
    if (p.ranks < 2) r.fail("ranks", "an all-reduce needs at least 2 ranks");
    p.bytes = r.bytes("bytes");
    if (r.has("busbw")) {  // nccl-tests: busbw = algbw x 2(p-1)/p
      const double busbw = r.bandwidth_Bps("busbw");
      p.measured_s = p.bytes * 2.0 * (p.ranks - 1) / p.ranks / busbw;
    } else {
      p.measured_s = r.duration_s("measured");
    }
  }
  if (!(p.measured_s > 0)) r.fail("measured", "expected a positive time");
  r.finish();
  return p;
}

}  // namespace

Result<std::vector<CalibrationPoint>> load_calibration_points(const std::string& path) {
  auto j = config::read_json_file(path);
  if (!j.ok()) return j.status();
  std::vector<CalibrationPoint> pts;
  Status st = config::to_status([&] {
    if (!j->is_object()) throw config::ConfigError(path + ": expected a JSON object");
    JsonReader r(*j, path);
    r.string("description", "");
    r.consume("sources");  // where the points' sources are, for readers
    for (const auto& p : r.objects("points")) pts.push_back(parse_point(p));
    r.finish();
  });
  if (!st.ok()) return st;
  return pts;
}

double predict_point(const CalibrationPoint& p, const Efficiency& e) {
  plan::ParallelPlan plan;
  if (p.kind == CalibrationPoint::kAllreduce) {
    // nccl-tests measure NCCL's own algorithms: no engine's custom all-reduce; a custom
    // kernel's timing is the one-shot kernel alone.
    Efficiency nccl = e;
    nccl.oneshot_max_bytes = p.oneshot ? 1e18 : 0;
    if (p.oneshot) nccl.allreduce_ll_bandwidth = nccl.nvls_bandwidth = 0;
    plan.tensor_parallel = p.ranks;
    const CostModel cm(model::ModelSpec{}, model::Quantization::kFP16, p.gpu, plan, nccl);
    return cm.allreduce_time_s(p.bytes, p.ranks, p.link.bandwidth_Bps, p.link.latency_s);
  }
  if (p.kind == CalibrationPoint::kGemm)
    return CostModel(model::ModelSpec{}, p.quantization, p.gpu, plan, e).gemm_time_s(p.m, p.n, p.k);
  if (p.kind == CalibrationPoint::kStream) return p.bytes / (p.gpu.hbm_bw_Bps * e.gemm_memory);
  if (p.kind == CalibrationPoint::kAttention)
    return CostModel(model::ModelSpec{}, p.quantization, p.gpu, plan, e)
        .prefill_attention_time_s(p.tokens, p.batch, p.heads, p.head_dim, p.causal);
  plan.tensor_parallel = p.tensor_parallel;
  CostModel cm(p.model, p.quantization, p.gpu, plan, e);
  cm.set_tp_link(p.link);
  BatchShape b;
  for (int i = 0; i < p.batch; ++i) {
    if (p.prefill)
      b.add(p.tokens, p.tokens, true, true);
    else
      b.add(1, p.context, false, true);
  }
  return cm.step_time_s(b, p.link, p.link);
}

Evaluation evaluate_points(const std::vector<CalibrationPoint>& points, const std::string& gpu,
                           const std::function<Efficiency(const std::string&)>& params) {
  Evaluation ev;
  std::vector<double> errors;
  for (const auto& p : points) {
    if (!gpu.empty() && p.gpu.name != gpu) continue;
    PointResult r;
    r.point = &p;
    r.predicted_s = predict_point(p, params(p.gpu.name));
    r.error = (r.predicted_s - p.measured_s) / p.measured_s;
    errors.push_back(r.error);
    ev.points.push_back(r);
  }
  summarize_errors(errors, &ev.fidelity);
  return ev;
}

}  // namespace prima::perf
