// Bad input to `prima simulate` and `prima validate`: exit code 2 and one clear line that
// names the file, the JSON path and what would be valid. Never a crash, never a default.
#include <gtest/gtest.h>

#include <fstream>

#include "tests/support/run_prima.h"

namespace prima::testing {
namespace {

std::string write(const std::string& name, const std::string& text) {
  std::string path = temp_dir("bad_" + name) + "/" + name;
  std::ofstream(path) << text;
  return path;
}

// A small valid scenario, as text, with `patch` replacing `key_line` when given.
std::string scenario(const std::string& model = "\"llama-2-7b\"",
                     const std::string& deployment =
                         R"({"parallel_strategy": {"tensor_parallel": 1, "pipeline_parallel": 1}})",
                     const std::string& extra = "") {
  return R"({"name": "t", "duration": "5s", "model": )" + model +
         R"(, "topology": "dgx_a100", "deployment": )" + deployment + extra +
         R"(, "workload": {"arrival": {"type": "poisson", "rate_rps": 2},
             "prompt_tokens": 100, "output_tokens": 20}})";
}

void expect_bad(const RunResult& r, const std::vector<std::string>& needles) {
  EXPECT_EQ(r.exit_code, 2) << r.err;
  for (const auto& n : needles)
    EXPECT_NE(r.err.find(n), std::string::npos) << "missing '" << n << "' in: " << r.err;
  EXPECT_EQ(r.err.find("terminate"), std::string::npos) << r.err;
}

TEST(BadInput, ValidScenarioBaselineRuns) {
  auto p = write("ok.json", scenario());
  auto r = run_prima("simulate " + p + " --no-files -q");
  EXPECT_EQ(r.exit_code, 0) << r.err;
}

TEST(BadInput, MalformedJsonNamesFileLineColumn) {
  auto p = write("malformed.json", "{\n  \"name\": \"x\",\n  \"seed\": ,\n}\n");
  expect_bad(run_prima("simulate " + p + " -q"), {"malformed.json:3:", "malformed JSON"});
}

TEST(BadInput, UnknownFieldIsNotSilentlyIgnored) {
  auto p = write("typo.json",
                 scenario("\"llama-2-7b\"", R"({"parallel_strategy": {"tensor_paralel": 1}})"));
  expect_bad(run_prima("simulate " + p + " -q"),
             {"typo.json", "/deployment/parallel_strategy/tensor_paralel", "unknown field",
              "tensor_parallel"});
}

TEST(BadInput, MissingWorkload) {
  auto p = write("noworkload.json", R"({"model": "llama-2-7b", "topology": "dgx_a100"})");
  expect_bad(run_prima("simulate " + p + " -q"), {"noworkload.json", "/workload", "missing"});
}

TEST(BadInput, WrongTypeNamesPathAndExpectation) {
  auto p = write("type.json", scenario("\"llama-2-7b\"",
                                       R"({"parallel_strategy": {"tensor_parallel": "four"}})"));
  expect_bad(run_prima("simulate " + p + " -q"),
             {"/deployment/parallel_strategy/tensor_parallel", "positive integer", "four"});
}

TEST(BadInput, UnknownModelListsCatalog) {
  auto p = write("model.json", scenario("\"llama-9-7b\""));
  expect_bad(run_prima("simulate " + p + " -q"), {"model.json", "/model", "llama-2-7b"});
}

TEST(BadInput, TensorParallelMustDivideHeads) {
  // Llama-2-7B has 32 heads: TP 3 does not divide them.
  auto p = write("tp.json",
                 scenario("\"llama-2-7b\"", R"({"parallel_strategy": {"tensor_parallel": 3}})"));
  expect_bad(run_prima("simulate " + p + " -q"), {"tp.json", "/deployment", "32"});
}

TEST(BadInput, ModelThatDoesNotFit) {
  auto p = write("fit.json", scenario("\"llama-2-70b\""));  // 138 GB of fp16 weights on one A100
  expect_bad(run_prima("simulate " + p + " -q"), {"fit.json", "/deployment", "does not fit", "GB"});
}

TEST(BadInput, TopologyWithTooFewGpus) {
  auto p = write("gpus.json",
                 scenario("\"llama-2-7b\"",
                          R"({"parallel_strategy": {"tensor_parallel": 8}, "replicas": 3})"));
  // dgx_a100 has 2 nodes of 8 GPUs.
  expect_bad(run_prima("simulate " + p + " -q"), {"gpus.json", "24", "has 16"});
}

TEST(BadInput, UnreadableTrace) {
  auto p = write("trace.json",
                 R"({"model": "llama-2-7b", "topology": "dgx_a100",
                     "workload": {"arrival": {"type": "trace", "format": "azure_csv",
                                              "path": "does_not_exist.csv"}}})");
  expect_bad(run_prima("simulate " + p + " -q"), {"does_not_exist.csv"});
}

TEST(BadInput, BadTraceRowNamesLine) {
  auto dir = temp_dir("badrow");
  std::ofstream(dir + "/t.csv") << "TIMESTAMP,ContextTokens,GeneratedTokens\n"
                                   "2023-11-16 18:15:46.6805900,100,20\n"
                                   "2023-11-16 18:15:47.0000000,abc,20\n";
  std::ofstream(dir + "/s.json") << R"({"model": "llama-2-7b", "topology": "dgx_a100",
      "workload": {"arrival": {"type": "trace", "format": "azure_csv", "path": "t.csv"}}})";
  expect_bad(run_prima("simulate " + dir + "/s.json -q"), {"t.csv:3", "ContextTokens"});
}

TEST(BadInput, BadSetOverride) {
  expect_bad(run_prima("simulate --set nonsense -q"), {"--set", "PATH=VALUE"});
  expect_bad(run_prima("simulate --set deployment.parallel_strategy.tensor_parallel=0 -q"),
             {"/deployment/parallel_strategy/tensor_parallel", "positive integer"});
  expect_bad(run_prima("simulate --set workload.arival.rate_rps=3 -q"),
             {"/workload/arival", "unknown field"});
}

TEST(BadInput, MissingScenarioFile) {
  auto r = run_prima("simulate /nonexistent/s.json -q");
  expect_bad(r, {"/nonexistent/s.json", "no such file"});
}

TEST(BadInput, UnknownFlagAndCommand) {
  expect_bad(run_prima("simulate --frobnicate"), {"frobnicate"});
  expect_bad(run_prima("frobnicate"), {"unknown command"});
}

TEST(BadInput, ValidateReportsEachFile) {
  auto good = write("good.json", scenario());
  auto bad = write("bad.json", scenario("\"llama-2-70b\""));
  auto r = run_prima("validate " + good + " " + bad);
  EXPECT_EQ(r.exit_code, 2);
  EXPECT_NE(r.out.find("ok     " + good), std::string::npos) << r.out;
  EXPECT_NE(r.err.find("does not fit"), std::string::npos) << r.err;
}

// Nesting far deeper than the stack could take (it crashed the parser's callers) is refused
// while parsing, with the limit named: in a scenario, in --set, in validate and in a trace.
TEST(BadInput, DeeplyNestedJsonIsRefusedNotACrash) {
  const std::string deep = std::string(50000, '[') + std::string(50000, ']');
  auto p = write("deep.json", R"({"name": )" + deep + "}");
  expect_bad(run_prima("simulate " + p + " -q"), {"deep.json:1:", "deeper than 64 levels"});
  auto v = run_prima("validate " + p);
  EXPECT_EQ(v.exit_code, 2) << v.err;
  EXPECT_NE(v.err.find("deeper than 64 levels"), std::string::npos) << v.err;
  auto dir = temp_dir("deeptrace");
  std::ofstream(dir + "/t.jsonl")
      << "{\"arrival_s\": 0, \"prompt_tokens\": 10, \"output_tokens\": 5}\n"
      << "{\"x\": " << deep << "}\n";
  std::ofstream(dir + "/s.json") << R"({"model": "llama-2-7b", "topology": "dgx_a100",
      "workload": {"arrival": {"type": "trace", "format": "jsonl", "path": "t.jsonl"}}})";
  expect_bad(run_prima("simulate " + dir + "/s.json -q"), {"t.jsonl:2", "deeper than 64"});
  // A --set value that does not parse as JSON (too deep) is taken as a string: the field's
  // own check then names it.
  expect_bad(run_prima("simulate --set seed=" + std::string(100, '[') + " -q"), {"/seed"});
}

TEST(BadInput, ShippedScenariosAndTopologiesValidate) {
  // Every file of topologies/: the topologies, the GPU specs and the price and power table.
  auto r =
      run_prima("validate " + source_path("scenarios/*.json") + " " +
                source_path("scenarios/bench/*.json") + " " + source_path("topologies/*.json"));
  EXPECT_EQ(r.exit_code, 0) << r.out << r.err;
  EXPECT_NE(r.out.find("topologies/gpus.json: GPU specs"), std::string::npos) << r.out;
  EXPECT_NE(r.out.find("topologies/prices.json: price and power table"), std::string::npos)
      << r.out;
  auto bad = write("prices.json", R"({"gpus": {"X": {"price_per_gpu_hour": 1,
      "price_source": "s", "idle_watts": 9, "peak_watts": 5, "power_source": "p"}}})");
  expect_bad(run_prima("validate " + bad), {"/gpus/X/idle_watts", "exceeds peak_watts 5"});
}

TEST(BadInput, PolicyOptionsNameTheField) {
  expect_bad(run_prima("simulate -q --set scheduler.reserved_high_share=1.5"),
             {"/scheduler/reserved_high_share"});
  expect_bad(run_prima("simulate -q --set scheduler.preemption_mode=evict"),
             {"/scheduler/preemption_mode", "recompute", "swap"});
  expect_bad(run_prima("simulate -q --set scheduler.max_num_seqs=-4"), {"/scheduler/max_num_seqs"});
  expect_bad(run_prima("simulate -q --set router.policy=random"),
             {"/router/policy", "power_of_two"});
  expect_bad(run_prima("simulate -q --set workload.priority_mix.urgent=0.1"),
             {"/workload/priority_mix", "urgent"});
  expect_bad(run_prima("simulate -q --set 'autoscaler={\"min_replicas\": 8, \"max_replicas\": 4}'"),
             {"/autoscaler/max_replicas"});
  expect_bad(
      run_prima(
          "simulate -q --set 'disaggregation={\"prefill_replicas\": 1, \"decode_replicas\": 2}'"),
      {"/disaggregation"});
}

}  // namespace
}  // namespace prima::testing

namespace prima::testing {
namespace {

// Faults: an element the topology lacks, a time outside the run, incompatible
// overlaps: exit 2 naming the fault entry. dgx_a100 = 2 nodes x 8 GPUs; the run is 5 s.
TEST(BadInput, FaultOnAGpuTheTopologyLacks) {
  auto p = write(
      "fault_gpu.json",
      scenario("\"llama-2-7b\"", R"({"parallel_strategy": {"tensor_parallel": 1}})",
               R"(, "faults": [{"type": "gpu_failure", "target": {"gpu": 16}, "start": 1}])"));
  expect_bad(
      run_prima("simulate " + p + " -q"),
      {"fault_gpu.json: /faults/0/target/gpu: gpu 16 is not in topology dgx_a100 (gpus 0-15)"});
}

TEST(BadInput, FaultOnALinkTheTopologyLacks) {
  auto p = write(
      "fault_link.json",
      scenario(
          "\"llama-2-7b\"", R"({"parallel_strategy": {"tensor_parallel": 1}})",
          R"(, "faults": [{"type": "link_down", "target": {"link": "node9_nic"}, "start": 1}])"));
  expect_bad(run_prima("validate " + p),
             {"/faults/0/target/link: link \"node9_nic\" is not in topology dgx_a100"});
}

TEST(BadInput, FaultOutsideTheRun) {
  auto p = write(
      "fault_time.json",
      scenario("\"llama-2-7b\"", R"({"parallel_strategy": {"tensor_parallel": 1}})",
               R"(, "faults": [{"type": "node_failure", "target": {"node": 1}, "start": "10s"}])"));
  expect_bad(run_prima("simulate " + p + " -q"),
             {"/faults/0/start: 10 s is outside the run's arrival window [0, 5 s)"});
}

TEST(BadInput, OverlappingIncompatibleFaults) {
  auto p = write("fault_overlap.json",
                 scenario("\"llama-2-7b\"", R"({"parallel_strategy": {"tensor_parallel": 1}})",
                          R"(, "faults": [
          {"type": "thermal", "target": "cluster", "start": 0, "duration": 3, "profile": [[0, 35]]},
          {"type": "thermal", "name": "hot aisle", "target": {"node": 0}, "start": 1, "profile": [[0, 45]]}])"));
  expect_bad(run_prima("simulate " + p + " -q"),
             {"/faults/1: overlaps /faults/0 (thermal#0 on cluster)", "node:0"});
}

TEST(BadInput, UnknownEnvironmentVariable) {
  auto p = write("env.json",
                 scenario("\"llama-2-7b\"", R"({"parallel_strategy": {"tensor_parallel": 1}})",
                          R"(, "env": {"NCCL_TIMOUT": "600"})"));
  expect_bad(run_prima("simulate " + p + " -q"), {"/env/NCCL_TIMOUT: unknown variable"});
}

TEST(BadInput, ServeRealOnlyFlagsWithTheSimBackend) {
  expect_bad(run_prima("serve --backend sim --repack"),
             {"--repack applies to --backend real only"});
  expect_bad(run_prima("serve --backend sim --no-repack"),
             {"--no-repack applies to --backend real only"});
  expect_bad(run_prima("serve --backend real --model m.gguf --repack --no-repack"),
             {"--repack and --no-repack exclude each other"});
  expect_bad(run_prima("generate --model m.gguf --prompt hi --repack --no-repack"),
             {"--repack and --no-repack exclude each other"});
  expect_bad(run_prima("serve --backend sim --max-num-seqs 4"),
             {"--max-num-seqs applies to --backend real only"});
}

}  // namespace
}  // namespace prima::testing
