// The search space as a table (engine/capacity/dimension.h): a dimension added through the
// table alone is enumerated, keyed, overridden and written; the built-in keys do not move when
// a plan does not list it; each built-in entry reads its own plan key.
#include <gtest/gtest.h>

#include <algorithm>
#include <set>

#include "engine/capacity/dimension.h"
#include "engine/capacity/prune.h"
#include "engine/capacity/search_space.h"
#include "engine/scenario/scenario.h"

namespace prima::capacity {
namespace {

using config::Json;

const char* kPlan = R"({"scenario": {"model": "llama-2-7b", "topology": "dgx_a100",
    "workload": {"arrival": {"type": "poisson", "rate_rps": 1}, "prompt_tokens": 100,
                 "output_tokens": 50}},
  "slo": {"ttft_p99": "300ms"}, "search": )";

Result<PlanSpec> plan_with(const std::string& search, std::shared_ptr<const DimensionTable> t) {
  return parse_plan(Json::parse(kPlan + search + "}"), "p.json", ".", std::move(t));
}

// A dimension the planner does not have: the router's policy. Everything it does is here.
Dimension router_policy() {
  Dimension d;
  d.name = "router_policy";
  d.about = "the router's policy (docs/cluster.md)";
  d.parse = [](const config::JsonReader& r, const PlanSpec&) {
    return listed_values(r, "router_policy", "routing policy names",
                         [](const Json& e) { return e.is_string(); });
  };
  d.check = [](const PlanConfig& c) {
    return c.value("router_policy") == "power_of_two" && c.replicas() < 2
               ? std::string("power_of_two needs two replicas to choose from")
               : std::string();
  };
  d.key = [](const PlanConfig& c) {
    const Json& v = c.value("router_policy");
    return v.is_null() ? std::string() : "route-" + v.get<std::string>();
  };
  d.set_order = 100;
  d.sets = [](const PlanConfig& c, std::vector<std::string>* s) {
    const Json& v = c.value("router_policy");
    if (!v.is_null()) s->push_back("router.policy=" + v.get<std::string>());
  };
  d.json = [](const PlanConfig& c, Json* j) {
    if (!c.value("router_policy").is_null()) (*j)["router_policy"] = c.value("router_policy");
  };
  return d;
}

std::shared_ptr<const DimensionTable> with_router_policy() {
  auto t = std::make_shared<DimensionTable>(*builtin_dimensions());
  t->dimensions.push_back(router_policy());
  return t;
}

TEST(SearchDimensions, AToyDimensionThroughTheTableAlone) {
  auto p = plan_with(R"({"topologies": ["dgx_a100"], "tensor_parallel": [1, 2],
      "replicas": [1, 2], "router_policy": ["round_robin", "power_of_two"]})",
                     with_router_policy());
  ASSERT_TRUE(p.ok()) << p.status().message();
  auto l = enumerate_configs(*p);
  ASSERT_TRUE(l.ok()) << l.status().message();
  // Enumerated innermost (last in the table): TP x replicas x policy; one replica cannot use
  // power_of_two, and says why.
  ASSERT_EQ(l->configs.size(), 6u);
  ASSERT_EQ(l->skipped.size(), 2u);
  EXPECT_EQ(l->configs[0].key(), "dgx_a100 A100-SXM4-80GB tp1 pp1 x1 route-round_robin");
  EXPECT_EQ(l->configs[1].key(), "dgx_a100 A100-SXM4-80GB tp1 pp1 x2 route-round_robin");
  EXPECT_EQ(l->configs[2].key(), "dgx_a100 A100-SXM4-80GB tp1 pp1 x2 route-power_of_two");
  EXPECT_EQ(l->skipped[0].config.key(), "dgx_a100 A100-SXM4-80GB tp1 pp1 x1 route-power_of_two");
  EXPECT_EQ(l->skipped[0].reason, "power_of_two needs two replicas to choose from");
  // Overridden: its --set is last (set_order 100), and the scenario it makes routes by it.
  const PlanConfig& c = l->configs[2];
  const auto sets = c.sets();
  ASSERT_FALSE(sets.empty());
  EXPECT_EQ(sets.back(), "router.policy=power_of_two");
  auto j = probe_scenario_json(*p, c, 1);
  ASSERT_TRUE(j.ok()) << j.status().message();
  auto sc = scenario::parse_scenario(*j, "p.json", ".");
  ASSERT_TRUE(sc.ok()) << sc.status().message();
  EXPECT_EQ(sc->routing, cluster::RoutingPolicy::kPowerOfTwo);
  // Written: results.jsonl and plan.json carry it in the configuration's JSON.
  EXPECT_EQ(c.to_json()["router_policy"], "power_of_two");
  EXPECT_EQ(c.to_json()["replicas"], 2);
}

TEST(SearchDimensions, UnlistedDimensionsLeaveKeysAndSetsAlone) {
  const std::string search = R"({"topologies": ["dgx_a100"], "tensor_parallel": [1, 2, 4],
      "replicas": [1, 2], "max_num_seqs": [16, 64]})";
  auto plain = plan_with(search, builtin_dimensions());
  auto extended = plan_with(search, with_router_policy());
  ASSERT_TRUE(plain.ok() && extended.ok());
  auto a = enumerate_configs(*plain), b = enumerate_configs(*extended);
  ASSERT_TRUE(a.ok() && b.ok());
  ASSERT_EQ(a->configs.size(), b->configs.size());
  for (std::size_t i = 0; i < a->configs.size(); ++i) {
    EXPECT_EQ(a->configs[i].key(), b->configs[i].key());
    EXPECT_EQ(a->configs[i].sets(), b->configs[i].sets());
    EXPECT_EQ(a->configs[i].to_json(), b->configs[i].to_json());
  }
  // The built-in table does not read the toy's key: the plan's error names it.
  auto bad = plan_with(R"({"topologies": ["dgx_a100"], "router_policy": ["power_of_two"]})",
                       builtin_dimensions());
  ASSERT_FALSE(bad.ok());
  EXPECT_NE(bad.status().message().find("router_policy"), std::string::npos)
      << bad.status().message();
}

// Every built-in dimension has a name, a line about it and a parser; names are unique; the
// --set orders are distinct, so the overrides' order never depends on the table's.
TEST(SearchDimensions, BuiltinTableIsWellFormed) {
  const auto t = builtin_dimensions();
  std::set<std::string> names;
  std::set<int> orders;
  for (const Dimension& d : t->dimensions) {
    EXPECT_FALSE(d.name.empty());
    EXPECT_FALSE(d.about.empty()) << d.name;
    EXPECT_TRUE(static_cast<bool>(d.parse)) << d.name;
    EXPECT_TRUE(names.insert(d.name).second) << d.name;
    if (d.sets) {
      EXPECT_TRUE(orders.insert(d.set_order).second) << d.name;
    }
  }
  EXPECT_EQ(t->dimensions.front().name, "topologies");
  EXPECT_NE(t->find("disaggregation"), nullptr);
  EXPECT_EQ(t->find("router_policy"), nullptr);
}

}  // namespace
}  // namespace prima::capacity
