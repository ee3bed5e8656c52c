// Embedded GPU specs and topologies: figures, overrides by "base", and error messages.
#include "engine/plan/topology.h"

#include <gtest/gtest.h>

namespace prima::plan {
namespace {

Topology resolve(const std::string& json_text) {
  config::Json j = config::Json::parse(json_text);
  config::JsonReader r(j, "s.json");
  Topology t = resolve_topology(r, "topology");
  r.finish();
  return t;
}

std::string error_of(const std::string& json_text) {
  try {
    resolve(json_text);
  } catch (const config::ConfigError& e) {
    return e.what();
  }
  return "(no error)";
}

TEST(Gpus, DatasheetFigures) {
  auto a100 = gpu_by_name("A100-SXM4-80GB");
  ASSERT_TRUE(a100.ok()) << a100.status().message();
  EXPECT_DOUBLE_EQ(a100->hbm_bytes, 80e9);
  EXPECT_DOUBLE_EQ(a100->hbm_bw_Bps, 2039e9);
  EXPECT_DOUBLE_EQ(a100->fp16_flops, 312e12);
  EXPECT_DOUBLE_EQ(a100->int8_ops, 624e12);
  EXPECT_DOUBLE_EQ(a100->fp8_flops, 0);
  auto h200 = gpu_by_name("H200-SXM-141GB");
  ASSERT_TRUE(h200.ok());
  EXPECT_DOUBLE_EQ(h200->hbm_bytes, 141e9);
  EXPECT_DOUBLE_EQ(h200->fp8_flops, 1979e12);
  EXPECT_EQ(gpu_names().size(), 5u);
  for (const auto& n : gpu_names()) EXPECT_FALSE(gpu_by_name(n)->source.empty()) << n;
  auto bad = gpu_by_name("B200");
  ASSERT_FALSE(bad.ok());
  EXPECT_NE(bad.status().message().find("A100-SXM4-40GB"), std::string::npos);
}

TEST(Topologies, AllEmbeddedOnesParseAndValidate) {
  const auto names = topology_names();
  EXPECT_EQ(names.size(), 4u);
  for (const auto& n : names) {
    const Topology t = resolve(R"({"topology": ")" + n + R"("})");
    EXPECT_EQ(t.name, n);
    EXPECT_TRUE(t.validate().ok()) << n;
  }
}

TEST(Topologies, BitbrickK1) {
  const Topology t = resolve(R"({"topology": "bitbrick_k1"})");
  EXPECT_EQ(t.nodes, 2);
  EXPECT_EQ(t.node.gpus, 4);
  EXPECT_EQ(t.total_gpus(), 8);
  EXPECT_EQ(t.gpu.name, "A100-SXM4-80GB");
  EXPECT_DOUBLE_EQ(t.node.nic.bandwidth_Bps, 25e9);  // 200 Gb/s HDR
  EXPECT_DOUBLE_EQ(t.node.nvlink.bandwidth_Bps, 300e9);
  EXPECT_EQ(t.storage.type, "ceph_all_flash");
  EXPECT_TRUE(t.settings.rdma && t.settings.gpu_direct_rdma && t.settings.numa_aware);
  EXPECT_EQ(t.node_of(5), 1);
}

TEST(Topologies, Domestic32gCluster) {
  const Topology t = resolve(R"({"topology": "domestic_32g_cluster"})");
  EXPECT_EQ(t.nodes, 50);
  EXPECT_EQ(t.node.gpus, 1);
  EXPECT_DOUBLE_EQ(t.gpu.hbm_bytes, 32e9);
  EXPECT_GE(t.node.nic.bandwidth_Bps, 100e9 / 8);
}

TEST(Topologies, BaseOverridesFields) {
  const Topology t = resolve(
      R"({"topology": {"base": "bitbrick_k1", "nodes": 16,
                       "settings": {"rdma.enable": 0, "gpu_direct_rdma": false}}})");
  EXPECT_EQ(t.nodes, 16);
  EXPECT_EQ(t.node.gpus, 4);
  EXPECT_FALSE(t.settings.rdma);
  EXPECT_FALSE(t.settings.gpu_direct_rdma);
  EXPECT_TRUE(t.settings.numa_aware);
}

TEST(Topologies, InlineObjectWithInlineGpu) {
  const Topology t = resolve(R"({"topology": {
      "name": "lab", "nodes": 1,
      "gpu": {"name": "toy", "source": "test", "memory": "16GiB", "hbm_bandwidth": "1TB/s",
              "fp16_tflops": 100},
      "node": {"gpus": 2, "nvlink": {"bandwidth": "100GB/s"}, "pcie": {"bandwidth": "16GB/s"},
               "nic": {"bandwidth": "100Gbps", "latency": "2us"}},
      "fabric": {"link": {"bandwidth": "100Gb/s"}}}})");
  EXPECT_DOUBLE_EQ(t.gpu.hbm_bytes, 16.0 * 1024 * 1024 * 1024);
  EXPECT_DOUBLE_EQ(t.gpu.int8_ops, 200e12);
  EXPECT_DOUBLE_EQ(t.node.nic.latency_s, 2e-6);
  EXPECT_EQ(t.fabric.type, "fat_tree");
}

TEST(Topologies, ClearErrors) {
  EXPECT_NE(error_of(R"({"topology": "bitbrik"})")
                .find("unknown topology \"bitbrik\"; built-in "
                      "topologies: "),
            std::string::npos);
  EXPECT_NE(error_of(R"({"topology": {"base": "bitbrick_k1", "nodez": 3}})").find("nodez"),
            std::string::npos);
  EXPECT_NE(error_of(R"({"topology": {"base": "bitbrick_k1", "nodes": 0}})")
                .find("expected a positive integer"),
            std::string::npos);
  EXPECT_NE(error_of(R"({"topology": {"base": "bitbrick_k1", "settings": {"numa_aware": 2}}})")
                .find("/topology/settings/numa_aware: expected 0, 1, true or false"),
            std::string::npos)
      << error_of(R"({"topology": {"base": "bitbrick_k1", "settings": {"numa_aware": 2}}})");
  EXPECT_NE(error_of(R"({"topology": {"base": "bitbrick_k1", "gpu": "V100"}})")
                .find("unknown GPU \"V100\""),
            std::string::npos);
}

TEST(Topologies, ValidateRejectsNonPositiveSizes) {
  Topology t = resolve(R"({"topology": "dgx_a100"})");
  t.node.nvlink.bandwidth_Bps = 0;
  const Status st = t.validate();
  ASSERT_FALSE(st.ok());
  EXPECT_NE(st.message().find("node.nvlink.bandwidth must be positive"), std::string::npos)
      << st.message();
}

}  // namespace
}  // namespace prima::plan
