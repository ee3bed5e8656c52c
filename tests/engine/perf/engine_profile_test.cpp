// The two axes of the cost model's data: every built-in engine profile parses and holds only
// engine terms; switching the engine changes only engine terms (the hardware profile's
// predictions of its microbenchmarks are bit-identical across engines); each axis refuses the
// other's terms naming the owner; scenarios pick an engine by name, file or object and get its
// scheduler defaults and KV sizing; the report's fidelity is the engine's out-of-sample error.
#include "engine/perf/engine_profile.h"

#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>

#include "engine/perf/calibration_set.h"
#include "engine/scenario/scenario.h"

namespace prima::perf {
namespace {

using config::Json;

TEST(EngineProfiles, BuiltinsParseAndHoldOnlyEngineTerms) {
  const auto names = builtin_engine_names();
  for (const char* want : {"vllm", "trtllm", "sglang", "splitwise-2023", "prima-cpu", "generic"})
    EXPECT_NE(std::find(names.begin(), names.end(), want), names.end()) << want;
  for (const auto& entry :
       std::filesystem::directory_iterator(std::string(PRIMA_SOURCE_DIR "/topologies/engines"))) {
    auto e = load_engine_profile_file(entry.path().string());
    ASSERT_TRUE(e.ok()) << e.status().message();
    ASSERT_NE(builtin_engine(e->name), nullptr) << entry.path();
    // Written back, an engine profile names no hardware term.
    const Json j = engine_profile_to_json(*e);
    for (const auto& f : efficiency_fields()) {
      if (f.axis == Axis::kHardware) {
        EXPECT_FALSE(j["terms"].contains(f.name)) << f.name;
      }
    }
  }
  EXPECT_EQ(std::string(kDefaultEngine), "vllm");
}

TEST(EngineProfiles, SwitchingTheEngineLeavesHardwarePredictionsBitIdentical) {
  auto points = load_calibration_points(
      std::string(PRIMA_SOURCE_DIR "/data/calibration/microbenchmarks.json"));
  ASSERT_TRUE(points.ok()) << points.status().message();
  ASSERT_GT(points->size(), 100u);
  for (const auto& p : *points) {
    const Profile* hw = builtin_profile(p.gpu.name);
    ASSERT_NE(hw, nullptr) << p.gpu.name;
    const double ref =
        predict_point(p, merge_axes(hw->efficiency, *builtin_engine("generic"), p.gpu.name));
    for (const char* name : {"vllm", "trtllm", "sglang", "splitwise-2023", "prima-cpu"}) {
      const double x =
          predict_point(p, merge_axes(hw->efficiency, *builtin_engine(name), p.gpu.name));
      EXPECT_EQ(x, ref) << p.id << " with " << name;  // bit-identical
    }
  }
}

TEST(EngineProfiles, EachAxisRefusesTheOthersTerms) {
  // A hardware term in an engine profile.
  const Json e1 = Json::parse(R"({"engine": "mine", "terms": {"gemm_compute": 0.5}})");
  Status s1 = config::to_status([&] { parse_engine_profile(config::JsonReader(e1, "e.json")); });
  ASSERT_FALSE(s1.ok());
  EXPECT_NE(s1.message().find("e.json: /terms/gemm_compute"), std::string::npos) << s1.message();
  EXPECT_NE(s1.message().find("hardware term"), std::string::npos) << s1.message();
  // An engine term in a scenario's calibration (the hardware axis).
  auto sc = scenario::parse_scenario(Json::parse(R"({"model": "llama-2-7b",
      "topology": "dgx_a100", "calibration": {"defaults": {"step_overhead_s": "1ms"}},
      "workload": {"arrival": {"type": "poisson", "rate_rps": 1}, "prompt_tokens": 10,
                   "output_tokens": 10}})"),
                                     "s.json", ".");
  ASSERT_FALSE(sc.ok());
  EXPECT_NE(sc.status().message().find("/calibration/defaults/step_overhead_s"), std::string::npos)
      << sc.status().message();
  EXPECT_NE(sc.status().message().find("engine term"), std::string::npos);
  // A non-physical engine term names the file and key.
  const Json e2 = Json::parse(R"({"engine": "mine", "terms": {"step_overhead_s": -1}})");
  Status s2 = config::to_status([&] { parse_engine_profile(config::JsonReader(e2, "e2.json")); });
  ASSERT_FALSE(s2.ok());
  EXPECT_NE(s2.message().find("e2.json: /terms/step_overhead_s"), std::string::npos)
      << s2.message();
  // A missing name.
  const Json e3 = Json::parse(R"({"terms": {"step_overhead_s": 0.001}})");
  Status s3 = config::to_status([&] { parse_engine_profile(config::JsonReader(e3, "e3.json")); });
  ASSERT_FALSE(s3.ok());
  EXPECT_NE(s3.message().find("e3.json: /engine"), std::string::npos) << s3.message();
}

scenario::Scenario scenario_with(const std::string& engine_json) {
  Json j = Json::parse(R"({"model": "llama-3-8b", "topology": {"base": "h200_node",
      "gpu": "H100-SXM5-80GB"},
      "workload": {"arrival": {"type": "poisson", "rate_rps": 1}, "prompt_tokens": 100,
                   "output_tokens": 50}})");
  if (!engine_json.empty()) j["engine"] = Json::parse(engine_json);
  auto sc = scenario::parse_scenario(j, "s.json", ".");
  EXPECT_TRUE(sc.ok()) << sc.status().message();
  return *sc;
}

// The scheduler a small scenario on `topology` ends with, `extra` merged into the scenario.
sched::SchedulerOptions scheduler_of(const char* topology, const std::string& extra) {
  Json j = Json::parse(R"({"model": "llama-3-8b",
      "workload": {"arrival": {"type": "poisson", "rate_rps": 1}, "prompt_tokens": 100,
                   "output_tokens": 50}})");
  j["topology"] = topology;
  j.update(Json::parse(extra));
  auto sc = scenario::parse_scenario(j, "s.json", ".");
  EXPECT_TRUE(sc.ok()) << sc.status().message();
  return sc.ok() ? sc->scheduler : sched::SchedulerOptions{};
}

TEST(EngineProfiles, ScenariosTakeTheEnginesDefaultsAndTerms) {
  const scenario::Scenario vllm = scenario_with("");  // the default
  EXPECT_EQ(vllm.calibration.engine->name, "vllm");
  const scenario::Scenario trt = scenario_with(R"("trtllm")");
  EXPECT_EQ(trt.scheduler.max_num_seqs, builtin_engine("trtllm")->scheduler.max_num_seqs);
  EXPECT_TRUE(trt.memory.kv_of_free);
  // Only engine terms differ between the two runs' parameters.
  const Efficiency a = resolve(vllm.calibration, "H100-SXM5-80GB").efficiency;
  const Efficiency b = resolve(trt.calibration, "H100-SXM5-80GB").efficiency;
  for (const auto& f : efficiency_fields()) {
    if (f.axis == Axis::kHardware) {
      EXPECT_EQ(a.*f.member, b.*f.member) << f.name;
    }
  }
  // An inline engine: a built-in with one term changed.
  const scenario::Scenario mine =
      scenario_with(R"({"base": "vllm", "terms": {"step_overhead_s": "3ms"}})");
  EXPECT_DOUBLE_EQ(resolve(mine.calibration, "H100-SXM5-80GB").efficiency.step_overhead_s, 0.003);
  EXPECT_TRUE(mine.calibration.engine->fidelity.empty());  // a modified engine is unmeasured
  // An unknown name lists the known ones.
  auto bad = scenario::parse_scenario(Json::parse(R"({"model": "llama-3-8b",
      "topology": "dgx_a100", "engine": "tgi-9000",
      "workload": {"arrival": {"type": "poisson", "rate_rps": 1}, "prompt_tokens": 10,
                   "output_tokens": 10}})"),
                                      "b.json", ".");
  ASSERT_FALSE(bad.ok());
  EXPECT_NE(bad.status().message().find("b.json: /engine: unknown engine \"tgi-9000\""),
            std::string::npos)
      << bad.status().message();
  EXPECT_NE(bad.status().message().find("trtllm"), std::string::npos);
}

// vLLM's API server picks its batch limits by device: 1,024 sequences and 8,192 tokens a step
// on 80 GB GPUs other than A100, 256 and 2,048 on A100; a scenario's GPU picks them, and its own
// "scheduler" still wins.
TEST(EngineProfiles, SchedulerDefaultsFollowTheScenariosGpu) {
  auto on = [](const std::string& topology, const std::string& extra) {
    Json j = Json::parse(R"({"model": "llama-3-8b",
        "workload": {"arrival": {"type": "poisson", "rate_rps": 1}, "prompt_tokens": 100,
                     "output_tokens": 50}})");
    j["topology"] = Json::parse(topology);
    if (!extra.empty()) j.update(Json::parse(extra));
    auto sc = scenario::parse_scenario(j, "s.json", ".");
    EXPECT_TRUE(sc.ok()) << sc.status().message();
    return sc.ok()
               ? std::make_pair(sc->scheduler.max_num_seqs, sc->scheduler.max_num_batched_tokens)
               : std::make_pair(0, 0);
  };
  EXPECT_EQ(on(R"({"base": "h200_node", "gpu": "H100-SXM5-80GB"})", ""),
            std::make_pair(1024, 8192));
  EXPECT_EQ(on(R"("h200_node")", ""), std::make_pair(1024, 8192));
  EXPECT_EQ(on(R"("dgx_a100")", ""), std::make_pair(256, 2048));
  EXPECT_EQ(on(R"("dgx_a100")", R"({"scheduler": {"max_num_seqs": 64}})"),
            std::make_pair(64, 2048));
  // A profile based on vllm that sets a default sets it on every GPU type.
  EXPECT_EQ(
      on(R"("h200_node")", R"({"engine": {"base": "vllm", "scheduler": {"max_num_seqs": 64}}})"),
      std::make_pair(64, 8192));
  // Another engine keeps one set.
  EXPECT_EQ(on(R"("dgx_a100")", R"({"engine": "trtllm"})"),
            std::make_pair(builtin_engine("trtllm")->scheduler.max_num_seqs,
                           builtin_engine("trtllm")->scheduler.max_num_batched_tokens));
  // Per-GPU defaults round-trip through the profile's JSON; an unknown GPU type is an error.
  const EngineProfile* v = builtin_engine("vllm");
  const EngineProfile back =
      parse_engine_profile(config::JsonReader(engine_profile_to_json(*v), "v.json"));
  EXPECT_EQ(back.scheduler_for("H200-SXM-141GB").max_num_seqs, 1024);
  EXPECT_EQ(back.scheduler_for("A100-SXM4-80GB").max_num_batched_tokens, 2048);
  const Json bad =
      Json::parse(R"({"engine": "mine", "scheduler": {"gpus": {"H900": {"max_num_seqs": 8}}}})");
  Status st = config::to_status([&] { parse_engine_profile(config::JsonReader(bad, "m.json")); });
  ASSERT_FALSE(st.ok());
  EXPECT_NE(st.message().find("m.json: /scheduler/gpus/H900: unknown GPU type"), std::string::npos)
      << st.message();
}

// An engine whose steps do not mix prefills with decodes says so in its scheduler defaults; the
// scenario starts from it, may override it, and the profile's JSON keeps it.
TEST(EngineProfiles, UnmixedBatchesAreASchedulerDefault) {
  auto mixed = [](const std::string& extra) {
    return scheduler_of("dgx_a100", extra).mixed_batches;
  };
  const std::string unmixed =
      R"({"engine": {"base": "vllm", "scheduler": {"mixed_batches": false}}})";
  EXPECT_TRUE(mixed(R"({"engine": "vllm"})"));
  EXPECT_FALSE(mixed(unmixed));
  EXPECT_TRUE(mixed(R"({"engine": {"base": "vllm", "scheduler": {"mixed_batches": false}},
                        "scheduler": {"mixed_batches": true}})"));
  EngineProfile e = *builtin_engine("vllm");
  e.scheduler.mixed_batches = false;
  e.scheduler.overlap_schedule = true;
  const Json j = engine_profile_to_json(e);
  EXPECT_EQ(j["scheduler"]["mixed_batches"], false);
  EXPECT_EQ(j["scheduler"]["overlap_schedule"], true);
  const EngineProfile back = parse_engine_profile(config::JsonReader(j, "e.json"));
  EXPECT_FALSE(back.scheduler.mixed_batches);
  EXPECT_TRUE(back.scheduler.overlap_schedule);
  const Json plain = engine_profile_to_json(*builtin_engine("vllm"))["scheduler"];
  EXPECT_FALSE(plain.contains("mixed_batches"));  // written only where not the default
  EXPECT_FALSE(plain.contains("overlap_schedule"));
}

// vLLM V1 and SGLang keep full prompt blocks cached by default (prefix caching, the radix
// cache); TensorRT-LLM's profile does not state it. A scenario's "scheduler" still wins, and
// the profile's JSON keeps the default.
TEST(EngineProfiles, PrefixCachingIsASchedulerDefault) {
  auto caching = [](const std::string& extra) {
    return scheduler_of("h200_node", extra).enable_prefix_caching;
  };
  EXPECT_TRUE(caching("{}"));  // the default engine, vllm
  EXPECT_TRUE(caching(R"({"engine": "sglang"})"));
  EXPECT_FALSE(caching(R"({"engine": "trtllm"})"));
  EXPECT_FALSE(caching(R"({"engine": "splitwise-2023"})"));
  EXPECT_FALSE(caching(R"({"scheduler": {"enable_prefix_caching": false}})"));
  EXPECT_FALSE(
      caching(R"({"engine": {"base": "vllm", "scheduler": {"enable_prefix_caching": false}}})"));
  const Json j = engine_profile_to_json(*builtin_engine("vllm"));
  EXPECT_EQ(j["scheduler"]["enable_prefix_caching"], true);
  EXPECT_TRUE(parse_engine_profile(config::JsonReader(j, "e.json")).scheduler.prefix_caching);
  EXPECT_FALSE(engine_profile_to_json(*builtin_engine("trtllm"))["scheduler"].contains(
      "enable_prefix_caching"));  // written only where on
}

TEST(EngineProfiles, TrtllmAdmitsAsGuaranteedNoEvict) {
  auto no_evict = [](const std::string& extra) {
    return scheduler_of("h200_node", extra).capacity_policy ==
           sched::CapacityPolicy::kGuaranteedNoEvict;
  };
  EXPECT_FALSE(no_evict("{}"));  // vllm admits, then preempts
  EXPECT_FALSE(no_evict(R"({"engine": "sglang"})"));
  EXPECT_TRUE(no_evict(R"({"engine": "trtllm"})"));
  EXPECT_FALSE(
      no_evict(R"({"engine": "trtllm", "scheduler": {"capacity_policy": "max_utilization"}})"));
  EXPECT_TRUE(no_evict(
      R"({"engine": {"base": "vllm", "scheduler": {"capacity_policy": "guaranteed_no_evict"}}})"));
  const Json j = engine_profile_to_json(*builtin_engine("trtllm"));
  EXPECT_EQ(j["scheduler"]["capacity_policy"], "guaranteed_no_evict");
  EXPECT_TRUE(parse_engine_profile(config::JsonReader(j, "e.json")).scheduler.guaranteed_no_evict);
  EXPECT_FALSE(engine_profile_to_json(*builtin_engine("vllm"))["scheduler"].contains(
      "capacity_policy"));  // written only where not the default
  auto bad = scenario::parse_scenario(Json::parse(R"({"model": "llama-3-8b",
      "topology": "h200_node", "scheduler": {"capacity_policy": "greedy"},
      "workload": {"arrival": {"type": "poisson", "rate_rps": 1}, "prompt_tokens": 10,
                   "output_tokens": 10}})"),
                                      "s.json", ".");
  ASSERT_FALSE(bad.ok());
  EXPECT_NE(bad.status().message().find("s.json: /scheduler/capacity_policy"), std::string::npos)
      << bad.status().message();
}

TEST(EngineProfiles, TrustStatesTheOutOfSampleErrorAndTheRange) {
  const scenario::Scenario sc = scenario_with("");
  const Resolved r = resolve(sc.calibration, "H100-SXM5-80GB");
  RunFacts far;
  far.params_b = 1000;
  far.tensor_parallel = 64;
  const Json t = trust_json(r, "H100-SXM5-80GB", &far);
  EXPECT_EQ(t["engine"], "vllm");
  ASSERT_TRUE(t["calibrated"].get<bool>()) << t.dump(2);
  const EngineFidelity& f = r.engine->fidelity.at("H100-SXM5-80GB");
  EXPECT_EQ(t["median_abs_error"].get<double>(), f.out_of_sample.median_abs_error);
  EXPECT_EQ(t["in_sample"]["median_abs_error"].get<double>(), f.in_sample.median_abs_error);
  EXPECT_NE(t["summary"].get<std::string>().find("out-of-sample"), std::string::npos);
  ASSERT_GE(t["out_of_range"].size(), 2u) << t.dump(2);
  EXPECT_NE(t["summary"].get<std::string>().find("outside the calibrated range"),
            std::string::npos);
  // An engine never measured on a GPU says the error is unknown.
  const Json u = trust_json(resolve(sc.calibration, "domestic-32GB"), "domestic-32GB", nullptr);
  EXPECT_FALSE(u["calibrated"].get<bool>());
  EXPECT_NE(u["summary"].get<std::string>().find("unknown"), std::string::npos);
}

}  // namespace
}  // namespace prima::perf
