// parse_scheduler_options: every key of a scenario's "scheduler" object; strict errors.
#include "engine/sched/scheduler_options.h"

#include <gtest/gtest.h>

#include <filesystem>

namespace prima::sched {
namespace {

using config::Json;

Status parse(const std::string& text, SchedulerOptions* o) {
  Json j = Json::parse(text);
  return config::to_status([&] {
    config::JsonReader root(j, "s.json");
    parse_scheduler_options(root.object("scheduler"), o);
  });
}

TEST(SchedulerOptionsParse, DefaultsAreTodaysBehaviour) {
  SchedulerOptions o;
  ASSERT_TRUE(parse(R"({"scheduler": {"max_model_len": 4096}})", &o).ok());
  EXPECT_EQ(o.type, SchedulerType::kContinuous);
  EXPECT_FALSE(o.priority_scheduling);
  EXPECT_EQ(o.preemption_mode, PreemptionMode::kRecompute);
  EXPECT_FALSE(o.long_prompt_queue);
  EXPECT_FALSE(o.enable_prefix_caching);
  EXPECT_EQ(o.max_prefill_tokens_per_step, 0);
  EXPECT_TRUE(o.validate().ok());
}

TEST(SchedulerOptionsParse, ReadsEveryKey) {
  SchedulerOptions o;
  Status st = parse(R"({"scheduler": {"type": "continuous", "max_num_seqs": 64,
      "max_num_batched_tokens": 2048, "chunked_prefill": false, "mixed_batches": false,
      "overlap_schedule": true, "block_size": 32, "watermark": 0.05, "max_step_retries": 1,
      "priority_scheduling": true,
      "reserved_high_share": 0.2, "preemption_mode": "swap", "swap_space_blocks": 1000,
      "long_prompt_queue": true, "long_prompt_threshold": 1024, "long_prompt_budget_share": 0.3,
      "max_prefill_tokens_per_step": 512, "max_decode_seqs_per_step": 32,
      "enable_prefix_caching": true, "compact_every_requests": 100}})",
                    &o);
  ASSERT_TRUE(st.ok()) << st.message();
  EXPECT_EQ(o.max_num_seqs, 64);
  EXPECT_FALSE(o.chunked_prefill);
  EXPECT_FALSE(o.mixed_batches);
  EXPECT_TRUE(o.overlap_schedule);
  EXPECT_EQ(o.block_size, 32);
  EXPECT_TRUE(o.priority_scheduling);
  EXPECT_DOUBLE_EQ(o.reserved_high_share, 0.2);
  EXPECT_EQ(o.preemption_mode, PreemptionMode::kSwap);
  EXPECT_EQ(o.swap_space_blocks, 1000);
  EXPECT_EQ(o.long_prompt_threshold, 1024);
  EXPECT_DOUBLE_EQ(o.long_prompt_budget_share, 0.3);
  EXPECT_EQ(o.max_prefill_tokens_per_step, 512);
  EXPECT_EQ(o.max_decode_seqs_per_step, 32);
  EXPECT_TRUE(o.enable_prefix_caching);
  EXPECT_EQ(o.compact_every_requests, 100);
  EXPECT_TRUE(o.validate().ok());
}

TEST(SchedulerOptionsParse, SeedDynamicBatching) {
  SchedulerOptions o;
  Status st = parse(R"({"scheduler": {"type": "dynamic_batching", "max_batch_size": 64,
      "timeout_ms": 50, "strategy": [{"name": "size_aware", "priority": 2},
      {"name": "fill_fifo", "priority": 1}]}})",
                    &o);
  ASSERT_TRUE(st.ok()) << st.message();
  EXPECT_EQ(o.type, SchedulerType::kDynamicBatching);
  EXPECT_EQ(o.max_batch_size, 64);
  EXPECT_DOUBLE_EQ(o.batch_timeout_s, 0.05);
  EXPECT_EQ(o.strategies,
            (std::vector<BatchStrategy>{BatchStrategy::kFillFifo, BatchStrategy::kSizeAware}));
}

TEST(SchedulerOptionsParse, TritonDynamicBatching) {
  SchedulerOptions o;
  Status st = parse(R"({"scheduler": {"type": "dynamic_batching",
      "preferred_batch_size": [64, 32], "max_queue_delay_microseconds": 5000}})",
                    &o);
  ASSERT_TRUE(st.ok()) << st.message();
  EXPECT_EQ(o.preferred_batch_sizes, (std::vector<int>{32, 64}));
  EXPECT_DOUBLE_EQ(o.batch_timeout_s, 0.005);
}

void expect_error(const std::string& text, const std::string& path, const std::string& what) {
  SchedulerOptions o;
  Status st = parse(text, &o);
  ASSERT_FALSE(st.ok()) << text;
  EXPECT_NE(st.message().find("s.json"), std::string::npos) << st.message();
  EXPECT_NE(st.message().find(path), std::string::npos) << st.message();
  EXPECT_NE(st.message().find(what), std::string::npos) << st.message();
}

TEST(SchedulerOptionsParse, BadOptionsNameTheJsonPath) {
  expect_error(R"({"scheduler": {"type": "fastest"}})", "/scheduler/type", "continuous");
  expect_error(R"({"scheduler": {"preemption_mode": "drop"}})", "/scheduler/preemption_mode",
               "swap");
  expect_error(R"({"scheduler": {"capacity_policy": "greedy"}})", "/scheduler/capacity_policy",
               "guaranteed_no_evict");
  expect_error(R"({"scheduler": {"reserved_high_share": 1}})", "/scheduler/reserved_high_share",
               "[0, 1)");
  expect_error(R"({"scheduler": {"reserved_high_share": -0.1}})", "/scheduler/reserved_high_share",
               "");
  expect_error(R"({"scheduler": {"max_decode_seqs_per_step": -1}})",
               "/scheduler/max_decode_seqs_per_step", "");
  expect_error(R"({"scheduler": {"swap_space_blocks": -5}})", "/scheduler/swap_space_blocks", "");
  expect_error(R"({"scheduler": {"long_prompt_threshold": 0}})", "/scheduler/long_prompt_threshold",
               "");
  expect_error(R"({"scheduler": {"priority": true}})", "priority", "");  // unknown key
  expect_error(R"({"scheduler": {"type": "dynamic_batching", "strategy": [{"name": "lifo"}]}})",
               "/scheduler/strategy/0/name", "fill_fifo");
  expect_error(R"({"scheduler": {"max_batch_size": 8}})", "/scheduler/max_batch_size",
               "dynamic_batching");
  expect_error(R"({"scheduler": {"type": "dynamic_batching", "preferred_batch_size": [0]}})",
               "/scheduler/preferred_batch_size", "positive");
  expect_error(R"({"scheduler": {"type": "dynamic_batching", "timeout_ms": 5,
      "max_queue_delay_microseconds": 5}})",
               "/scheduler/max_queue_delay_microseconds", "not both");
  expect_error(R"({"scheduler": {"type": "dynamic_batching", "priority_scheduling": true}})",
               "/scheduler/priority_scheduling", "continuous");
}

TEST(SchedulerOptionsParse, EveryShippedScenarioParses) {
  // The lead's loader will call parse_scheduler_options on each scenario's "scheduler".
  int seen = 0;
  for (const auto& e : std::filesystem::recursive_directory_iterator(std::string(PRIMA_SOURCE_DIR) +
                                                                     "/scenarios")) {
    if (e.path().extension() != ".json") continue;
    auto j = config::read_json_file(e.path().string());
    ASSERT_TRUE(j.ok()) << e.path();
    if (!j->contains("scheduler")) continue;
    SchedulerOptions o;
    Status st = config::to_status([&] {
      config::JsonReader root(*j, e.path().string());
      parse_scheduler_options(root.object("scheduler"), &o);
    });
    EXPECT_TRUE(st.ok()) << st.message();
    EXPECT_TRUE(o.validate().ok()) << e.path();
    ++seen;
  }
  EXPECT_GT(seen, 0);
}

}  // namespace
}  // namespace prima::sched
