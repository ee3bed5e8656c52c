// open_real_cluster: the real backend's assembly (see real_cluster.h), shared by `prima serve
// --backend real` and `prima generate`.
#include "backends/real/real_cluster.h"

#include <algorithm>

namespace prima::real {

RealCluster::~RealCluster() {
  // The executor's worker posts to rt: join it before the engine and rt go.
  if (backend) backend->shutdown();
}

void RealCluster::run(const std::function<void()>& publish, double publish_every_s) {
  std::function<void()> tick = [&] {
    publish();
    rt->at(rt->now() + publish_every_s, tick);
  };
  rt->post(tick);
  rt->run();
}

Result<std::unique_ptr<RealCluster>> open_real_cluster(const RealBackendOptions& o) {
  auto c = std::make_unique<RealCluster>();
  PRIMA_ASSIGN_OR_RETURN(c->backend, RealBackend::open(o));
  const int model_ctx = c->backend->context_length();
  c->max_model_len = o.max_model_len > 0 ? std::min(o.max_model_len, model_ctx) : model_ctx;
  if (!c->backend->is_leader()) return c;

  c->rt = std::make_unique<WallRuntime>();
  cluster::EngineOptions eo;
  eo.scheduler.block_size = c->backend->block_size();
  eo.scheduler.max_num_seqs = o.max_num_seqs;
  if (o.max_num_batched_tokens > 0) eo.scheduler.max_num_batched_tokens = o.max_num_batched_tokens;
  eo.max_model_len = c->max_model_len;
  std::vector<cluster::ReplicaSetup> replicas;
  for (int r = 0; r < c->backend->replicas(); ++r) {
    cluster::ReplicaSetup rs;
    rs.executor = c->backend->executor(c->rt.get(), r);
    rs.gpus = o.tp * o.pp;
    rs.stage_gpus = o.tp;
    rs.num_kv_blocks = c->backend->num_kv_blocks();
    replicas.push_back(rs);
  }
  c->recorder = std::make_unique<metrics::Recorder>(o.replicas * o.tp * o.pp);
  c->engine = std::make_unique<cluster::ServingEngine>(c->rt.get(), eo, std::move(replicas),
                                                       c->recorder.get());
  return c;
}

}  // namespace prima::real
