#include "engine/cluster/cluster_options.h"

#include <gtest/gtest.h>

namespace prima::cluster {
namespace {

std::string parse_error(const char* text) {
  config::Json j = config::Json::parse(text);
  ClusterOptions o;
  Status st =
      config::to_status([&] { parse_cluster_options(config::JsonReader(j, "s.json"), &o); });
  return st.ok() ? "" : st.message();
}

TEST(ClusterOptions, DefaultsWhenAbsent) {
  config::Json j = config::Json::object();
  ClusterOptions o;
  parse_cluster_options(config::JsonReader(j, "s.json"), &o);
  EXPECT_EQ(o.router.policy, RoutingPolicy::kRoundRobin);
  EXPECT_FALSE(o.autoscaler.enabled);
  EXPECT_FALSE(o.disaggregation.enabled());
  EXPECT_FALSE(o.response_cache.enabled);
  EXPECT_EQ(o.warmup.requests, 0);
}

TEST(ClusterOptions, ReadsEverySection) {
  config::Json j = config::Json::parse(R"({
    "router": {"policy": "prefix_affinity", "seed": 9, "affinity_slack_tokens": 100},
    "autoscaler": {"target_utilization": 0.8, "min_replicas": 4, "max_replicas": 32,
                   "interval": "30s", "scale_down_stabilization": "5min",
                   "scale_down_utilization": 0.1},
    "response_cache": {"enabled": true, "max_prompt_tokens": 128, "capacity": 50, "ttl": "10s"},
    "warmup": {"requests": 16, "prompt_tokens": 16, "output_tokens": 1},
    "other": 1})");
  ClusterOptions o;
  config::JsonReader r(j, "s.json");
  parse_cluster_options(r, &o);
  EXPECT_EQ(o.router.policy, RoutingPolicy::kPrefixAffinity);
  EXPECT_EQ(o.router.seed, 9u);
  EXPECT_TRUE(o.autoscaler.enabled);
  EXPECT_DOUBLE_EQ(o.autoscaler.interval_s, 30);
  EXPECT_DOUBLE_EQ(o.autoscaler.scale_down_stabilization_s, 300);
  EXPECT_EQ(o.response_cache.capacity, 50);
  EXPECT_DOUBLE_EQ(o.response_cache.ttl_s, 10);
  EXPECT_EQ(o.warmup.requests, 16);
  EXPECT_THROW(r.finish(), config::ConfigError);  // "other" is left to the caller
}

TEST(ClusterOptions, ErrorsNameThePath) {
  EXPECT_NE(parse_error(R"({"router": {"policy": "random"}})").find("/router/policy"),
            std::string::npos);
  EXPECT_NE(parse_error(R"({"autoscaler": {"min_replicas": -1}})").find("/autoscaler/min_replicas"),
            std::string::npos);
  EXPECT_NE(parse_error(R"({"autoscaler": {"min_replicas": 8, "max_replicas": 4}})")
                .find("/autoscaler/max_replicas"),
            std::string::npos);
  EXPECT_NE(parse_error(R"({"response_cache": {"capcity": 3}})").find("capcity"),
            std::string::npos);
  EXPECT_NE(parse_error(R"({"warmup": {"requests": -2}})").find("/warmup/requests"),
            std::string::npos);
  EXPECT_NE(parse_error(R"({"disaggregation": {"prefill_replicas": 2}})")
                .find("/disaggregation/decode_replicas"),
            std::string::npos);
  EXPECT_NE(parse_error(R"({"autoscaler": {}, "disaggregation": {"prefill_replicas": 1,
                                                                   "decode_replicas": 1}})")
                .find("/autoscaler"),
            std::string::npos);
  EXPECT_NE(parse_error(R"({"autoscaler": {"target_utilization": 1.5}})")
                .find("/autoscaler/target_utilization"),
            std::string::npos);
}

}  // namespace
}  // namespace prima::cluster
