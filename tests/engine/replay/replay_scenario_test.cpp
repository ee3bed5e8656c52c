// A scenario as the replay of a measured run (engine/replay/replay_scenario.h) and the fit's
// parameters by name (engine/replay/fit_params.h): the trace holds exactly the measured
// arrivals and lengths, the workload and duration are replaced, a request over the context
// limit names its line, and parameter names, bounds and steps follow efficiency_fields().
#include "engine/replay/replay_scenario.h"

#include <gtest/gtest.h>
#include <unistd.h>

#include <cstdio>
#include <filesystem>

#include "engine/replay/fit_params.h"
#include "engine/workload/trace.h"

namespace prima::replay {
namespace {

MeasuredRun run_of(std::vector<std::pair<double, int>> arrivals_prompts) {
  MeasuredRun run;
  run.file = "m.jsonl";
  int line = 1;
  for (auto [t, p] : arrivals_prompts) {
    MeasuredRequest r;
    r.line = ++line;
    r.arrival_s = t;
    r.prompt_tokens = p;
    r.output_tokens = 7;
    run.requests.push_back(r);
  }
  return run;
}

TEST(ReplayScenario, TheTraceHoldsTheExactArrivalsAndLengths) {
  // Doubles that a short decimal form would not give back exactly.
  MeasuredRun run = run_of({{0.1 + 0.2, 10}, {1.0 / 3.0, 20}, {123.456789012345678, 30}});
  run.requests[1].priority = 0;
  const std::string path = (std::filesystem::temp_directory_path() /
                            ("replay_trace_" + std::to_string(::getpid()) + ".jsonl"))
                               .string();
  ASSERT_TRUE(write_replay_trace(run, path).ok());
  auto t = workload::read_trace(workload::TraceFormat::kJsonl, path);
  std::remove(path.c_str());
  ASSERT_TRUE(t.ok()) << t.status().message();
  ASSERT_EQ(t->size(), 3u);
  for (std::size_t i = 0; i < 3; ++i) {
    EXPECT_EQ((*t)[i].arrival_s, run.requests[i].arrival_s) << i;  // bit for bit
    EXPECT_EQ((*t)[i].prompt_tokens, run.requests[i].prompt_tokens);
    EXPECT_EQ((*t)[i].output_tokens, 7);
  }
  EXPECT_EQ((*t)[0].priority, -1);
  EXPECT_EQ((*t)[1].priority, 0);
}

TEST(ReplayScenario, ReplacesTheWorkloadAndHoldsEveryArrival) {
  scenario::Scenario sc;
  sc.workload.arrival.type = workload::ArrivalType::kPoisson;
  sc.workload.arrival.rate_rps = 99;
  sc.workload.max_requests = 5;
  sc.duration_s = 2;
  MeasuredRun run = run_of({{0, 1}, {30.5, 1}});
  use_replay_trace(&sc, "/tmp/t.jsonl", run);
  EXPECT_EQ(sc.workload.arrival.type, workload::ArrivalType::kTrace);
  EXPECT_EQ(sc.workload.arrival.format, workload::TraceFormat::kJsonl);
  EXPECT_EQ(sc.workload.arrival.path, "/tmp/t.jsonl");
  EXPECT_EQ(sc.workload.arrival.time_scale, 1);
  EXPECT_EQ(sc.workload.arrival.rate_rps, 0);
  EXPECT_FALSE(sc.workload.arrival.loop);
  EXPECT_EQ(sc.workload.max_requests, 0u);
  EXPECT_GT(sc.duration_s, 30.5);
}

TEST(ReplayScenario, ARequestOverTheContextLimitNamesItsLine) {
  scenario::Scenario sc;
  sc.file = "s.json";
  sc.max_model_len = 100;
  MeasuredRun run = run_of({{0, 50}, {1, 93}, {2, 200}});  // 93 + 7 = 100 fits
  Status st = check_fits_scenario(run, sc);
  ASSERT_FALSE(st.ok());
  EXPECT_NE(st.message().find("m.jsonl:4: prompt_tokens + output_tokens: 200 + 7 = 207 is over "
                              "the scenario's max_model_len 100 (s.json)"),
            std::string::npos)
      << st.message();
  run.requests[2].ok = false;  // refused by the server too: replayed as it is
  EXPECT_TRUE(check_fits_scenario(run, sc).ok());
}

TEST(FitParams, NamesComeFromTheEfficiencyTable) {
  auto p = parse_fit_params(kDefaultFitParams);
  ASSERT_TRUE(p.ok()) << p.status().message();
  ASSERT_EQ(p->size(), 4u);
  EXPECT_STREQ((*p)[0]->name, "gemm_compute");
  EXPECT_STREQ((*p)[3]->name, "seq_overhead_s");
  for (const auto& f : perf::efficiency_fields())
    EXPECT_TRUE(parse_fit_params(f.name).ok()) << f.name;
  auto bad = parse_fit_params("gemm_memory,warp_speed");
  ASSERT_FALSE(bad.ok());
  EXPECT_NE(bad.status().message().find("--fit-params: unknown parameter \"warp_speed\" (one of: "
                                        "gemm_compute,"),
            std::string::npos)
      << bad.status().message();
  EXPECT_FALSE(parse_fit_params("gemm_memory,gemm_memory").ok());
  EXPECT_FALSE(parse_fit_params("").ok());
}

TEST(FitParams, BoundsAndStepsFollowTheKind) {
  auto p = parse_fit_params("gemm_memory,step_overhead_s,nvls_bandwidth,gemm_m_half");
  ASSERT_TRUE(p.ok());
  EXPECT_EQ(fit_bound(*(*p)[0]).lo, 0.01);
  EXPECT_EQ(fit_bound(*(*p)[0]).hi, 1);
  EXPECT_EQ(fit_bound(*(*p)[1]).lo, 0);
  EXPECT_TRUE(std::isinf(fit_bound(*(*p)[1]).hi));
  EXPECT_EQ(fit_bound(*(*p)[2]).lo, 0);
  EXPECT_EQ(fit_bound(*(*p)[2]).hi, 1);
  EXPECT_DOUBLE_EQ(fit_initial_step(*(*p)[1], 2e-3), 1e-3);
  EXPECT_GT(fit_initial_step(*(*p)[1], 0), 0);
  // A value under a nanosecond is a fit's zero (prima profile writes e.g. 5e-15 s): the step
  // is the one from 0, not half of nothing.
  EXPECT_DOUBLE_EQ(fit_initial_step(*(*p)[1], 5e-15), fit_initial_step(*(*p)[1], 0));
  EXPECT_DOUBLE_EQ(fit_initial_step(*(*p)[1], 0), 1e-4);
  EXPECT_DOUBLE_EQ(fit_initial_step(*(*p)[1], 2e-6), 1e-6);
  EXPECT_GT(fit_initial_step(*(*p)[3], 0), 0);
  perf::Efficiency e;
  set_params(&e, *p, {0.5, 4e-3, 0.25, 64});
  EXPECT_EQ(e.gemm_memory, 0.5);
  EXPECT_EQ(e.step_overhead_s, 4e-3);
  EXPECT_EQ(get_params(e, *p), (std::vector<double>{0.5, 4e-3, 0.25, 64}));
}

}  // namespace
}  // namespace prima::replay
