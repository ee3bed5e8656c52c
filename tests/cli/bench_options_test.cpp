// `prima bench`'s options: the flags fill them (aliases, defaults), validate() refuses each
// bad value naming the flag and the value, and a validated struct gives the load generator's
// options with the defaults that depend on other flags.
#include "cli/bench_options.h"

#include <gtest/gtest.h>

#include <functional>

#include "cli/flags.h"
#include "tests/cli/options_test_util.h"

namespace prima::cli {
namespace {

BenchOptions parsed(const Args& args) {
  boost::program_options::variables_map vm;
  std::string error;
  EXPECT_TRUE(parse_flags(args, bench_flags(), &vm, &error)) << error;
  return bench_options(vm);
}

TEST(BenchOptions, DefaultsAreValid) {
  const BenchOptions o = parsed({});
  EXPECT_TRUE(o.validate().ok()) << o.validate().message();
  EXPECT_EQ(o.url, "http://127.0.0.1:8000");
  EXPECT_TRUE(o.streaming());
  const loadgen::ScheduleOptions so = o.schedule();
  EXPECT_EQ(so.max_concurrency, 256);  // rate inf: at most 256 in flight
  EXPECT_EQ(so.num_prompts, 1000u);    // nothing else bounds the run
  EXPECT_DOUBLE_EQ(o.client().timeout_s, 600);
}

TEST(BenchOptions, FlagsAndAliasesFillTheOptions) {
  const BenchOptions o = parsed({"--base-url",
                                 "http://h:1/p",
                                 "--rate",
                                 "2.5",
                                 "--input-len",
                                 "7",
                                 "--output-len",
                                 "9",
                                 "--dataset",
                                 "d.jsonl",
                                 "--no-stream",
                                 "--temperature",
                                 "0",
                                 "--top-k",
                                 "5",
                                 "--extra-body",
                                 R"({"seed": 7})",
                                 "--timeout",
                                 "2s",
                                 "--slo-ttft",
                                 "200ms"});
  ASSERT_TRUE(o.validate().ok()) << o.validate().message();
  EXPECT_EQ(o.dataset_path, "d.jsonl");
  const loadgen::ScheduleOptions so = o.schedule();
  EXPECT_DOUBLE_EQ(so.request_rate, 2.5);
  EXPECT_EQ(so.input_len, 7);
  EXPECT_EQ(so.output_len, 9);
  EXPECT_EQ(so.max_concurrency, 0);  // a finite rate: no default cap
  const loadgen::ClientOptions co = o.client();
  EXPECT_EQ(co.url.prefix, "/p");
  EXPECT_FALSE(co.body.stream);
  EXPECT_EQ(co.body.extra, nlohmann::json::parse(R"({"seed": 7, "temperature": 0.0, "top_k": 5})"));
  EXPECT_DOUBLE_EQ(co.timeout_s, 2);
  EXPECT_DOUBLE_EQ(o.slo({1, 2, 3}).ttft_s, 0.2);
  EXPECT_DOUBLE_EQ(o.slo({1, 2, 3}).tpot_s, 2);
}

// One bad value per flag with a constraint: the message names the flag and the value.
TEST(BenchOptions, EachBadValueNamesTheFlag) {
  struct Case {
    std::function<void(BenchOptions*)> set;
    std::string want;
  };
  const std::vector<Case> cases = {
      {[](BenchOptions* o) { o->stream_flag = o->no_stream = true; },
       "--stream and --no-stream exclude each other"},
      {[](BenchOptions* o) { o->url = "127.0.0.1:8000"; }, "--url '127.0.0.1:8000'"},
      {[](BenchOptions* o) { o->endpoint = "kserve"; }, "--endpoint 'kserve'"},
      {[](BenchOptions* o) { o->extra_body = "{oops"; }, "--extra-body: not JSON"},
      {[](BenchOptions* o) { o->extra_body = "[1]"; }, "--extra-body: expected a JSON object"},
      {[](BenchOptions* o) { o->temperature = 101; },
       "--temperature must be between 0 and 100, got 101"},
      {[](BenchOptions* o) { o->top_p = 0; }, "--top-p must be > 0 and <= 1, got 0"},
      {[](BenchOptions* o) { o->top_k = -2; },
       "--top-k must be -1, 0 (off) or a positive integer, got -2"},
      {[](BenchOptions* o) { o->timeout = "0s"; }, "--timeout: '0s' is not a positive duration"},
      {[](BenchOptions* o) { o->request_rate = "fast"; },
       "--request-rate: 'fast' is not a positive number or 'inf'"},
      {[](BenchOptions* o) { o->request_rate = "-3"; }, "--request-rate: '-3'"},
      {[](BenchOptions* o) { o->concurrency = 0; }, "--concurrency must be >= 1, got 0"},
      {[](BenchOptions* o) { o->max_concurrency = -1; }, "--max-concurrency must be >= 1, got -1"},
      {[](BenchOptions* o) { o->num_prompts = 0; }, "--num-prompts: 0 must be >= 1"},
      {[](BenchOptions* o) { o->duration = "-1s"; },
       "--duration: '-1s' is not a positive duration"},
      {[](BenchOptions* o) {
         o->scenario = "s.json";
         o->input_len = 5;
       },
       "--scenario gives the workload"},
      {[](BenchOptions* o) { o->sets = {"seed=1"}; }, "--set needs --scenario"},
      {[](BenchOptions* o) { o->slo_ttft = "200"; }, "--slo-ttft: '200' needs a unit"},
      {[](BenchOptions* o) { o->slo_tpot = "0ms"; },
       "--slo-tpot: '0ms' is not a positive duration"},
      {[](BenchOptions* o) { o->slo_e2e = "soon"; }, "--slo-e2e: 'soon'"},
  };
  for (const auto& c : cases) {
    BenchOptions o;
    c.set(&o);
    EXPECT_TRUE(refused(o.validate(), c.want));
  }
}

}  // namespace
}  // namespace prima::cli
