// Shared fixtures of the parallel-layout cost tests: catalog models, an H200 of datasheet
// figures, HGX nodes of eight of them and decode batches.
#pragma once

#include <gtest/gtest.h>

#include <string>

#include "engine/model/model_spec.h"
#include "engine/perf/cost_model.h"
#include "engine/plan/parallel_plan.h"

namespace prima::perf::fixtures {

inline model::ModelSpec get(const std::string& name) {
  auto m = model::model_by_name(name);
  EXPECT_TRUE(m.ok()) << m.status().message();
  return *m;
}

inline plan::GpuSpec h200() {
  plan::GpuSpec g;
  g.name = "H200-SXM";
  g.fp16_flops = g.bf16_flops = 989e12;
  g.fp8_flops = 1979e12;
  g.int8_ops = 1979e12;
  g.hbm_bytes = 141e9;
  g.hbm_bw_Bps = 4.8e12;
  return g;
}

// `nodes` nodes of 8 H200 on 450 GB/s NVLink, 50 GB/s NICs.
inline plan::Topology node_of(int nodes) {
  plan::Topology t;
  t.name = "h200x8";
  t.gpu = h200();
  t.nodes = nodes;
  t.node.gpus = 8;
  t.node.nvlink = {450e9, 1e-6};
  t.node.pcie = {64e9, 1e-6};
  t.node.nic = {50e9, 5e-6};
  t.fabric.link = {50e9, 1e-6};
  t.storage.type = "test";
  t.storage.read_bandwidth_Bps = 10e9;
  return t;
}

// `seqs` sequences decoding one token each at `context` tokens.
inline BatchShape decode(int seqs, int context) {
  BatchShape b;
  for (int i = 0; i < seqs; ++i) b.add(1, context, false, true);
  return b;
}

}  // namespace prima::perf::fixtures
