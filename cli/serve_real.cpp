// `prima serve --backend real`: the cluster backends/real assembles (real::RealCluster: a GGUF
// model on this machine's CPU, one replica or --replicas of them, the engine on a WallRuntime)
// behind the HTTP server, which tokenizes with the model's tokenizer and chat template (RealCodec).
// Under mpirun with --tp/--pp, rank 0 serves HTTP and the other ranks execute its steps.
#include <fmt/format.h>

#include <chrono>
#include <filesystem>

#include "backends/real/comm/communicator.h"
#include "backends/real/nic_counters.h"
#include "backends/real/real_cluster.h"
#include "cli/commands.h"
#include "cli/real_cluster_open.h"
#include "cli/real_codec.h"
#include "cli/serve.h"
#include "cli/synthetic_option.h"

namespace prima::cli {
namespace {

// The backend's options from the serve flags.
real::RealBackendOptions backend_options(const ServeOptions& o) {
  real::RealBackendOptions bo;
  bo.model_path = o.model_path;
  bo.manifest = o.manifest;
  bo.threads = o.kernel_threads;
  bo.tp = o.tp;
  bo.pp = o.pp;
  bo.replicas = o.replicas;
  bo.comm_timeout_s = o.comm_timeout_s;
  bo.device_forward = device_forward(o.device.spec(), o.device.quant());
  bo.max_num_seqs = o.max_num_seqs;
  bo.max_num_batched_tokens = o.max_num_batched_tokens;
  bo.max_model_len = o.max_model_len;
  bo.repack = !o.no_repack;
  return bo;
}

// Rank 0's traffic with every other rank and the host's retransmission counters, for
// /metrics (read at each scrape).
server::LinkCounters link_counters(const real::RealBackend& b) {
  server::LinkCounters c;
  const auto sent = b.bytes_sent(), received = b.bytes_received();
  for (std::size_t r = 1; r < sent.size(); ++r) {
    c.bytes.push_back({fmt::format("0->{}", r), sent[r]});
    c.bytes.push_back({fmt::format("{}->0", r), received[r]});
  }
  for (const auto& x : real::read_retransmit_counters())
    c.retransmits.push_back({x.transport, x.device, x.port, x.count});
  return c;
}

server::ModelInfo model_info(const ServeOptions& o, const real::RealCluster& cl,
                             const server::TextCodec* codec) {
  server::ModelInfo model;
  model.name = o.synthetic.empty() ? std::filesystem::path(o.model_path).stem().string()
                                   : synthetic_model_name(o.synthetic);
  apply_served_names(o, &model);
  model.max_model_len = cl.max_model_len;
  model.created = std::chrono::duration_cast<std::chrono::seconds>(
                      std::chrono::system_clock::now().time_since_epoch())
                      .count();
  model.codec = codec;
  return model;
}

}  // namespace

int serve_real(const ServeOptions& given) {
  ServeOptions o = given;
  if (auto code = device_unavailable("prima serve", o.device)) return *code;
  if (auto code = resolve_synthetic("prima serve", o.synthetic,
                                    o.device.spec().kind != real::DeviceKind::kCpu, &o.model_path))
    return *code;
  int exit_code = kExitOk;
  const std::unique_ptr<real::RealCluster> cl =
      open_real_cluster(backend_options(o), o.repack, "prima serve", &exit_code);
  if (!cl) return exit_code;
  if (!cl->is_leader()) return run_real_worker(cl.get(), "prima serve");
  cl->recorder->set_retention(10000,
                              3600);  // no report is written: bounded memory (docs/serving.md)
  cl->engine->start();

  RealCodec codec(cl->backend->tokenizer());
  WallRuntime& rt = *cl->rt;
  server::EngineBridge bridge(
      cl->engine.get(), &rt, [&](std::function<void()> fn) { rt.post(std::move(fn)); }, &codec);
  const server::ModelInfo model = model_info(o, *cl, &codec);
  server::ServerMetrics metrics(model.name, model.max_model_len);
  bridge.set_metrics(&metrics, cl->recorder.get(), o.replicas * o.tp * o.pp);
  metrics.set_link_source([b = cl->backend.get()] { return link_counters(*b); });

  const nlohmann::json limits = engine_limits(*cl->engine);
  const std::string banner =
      fmt::format("{} ({}) on this CPU, {}TP{} x PP{}, context {}; {}", model.name, o.model_path,
                  o.replicas > 1 ? fmt::format("{} replicas of ", o.replicas) : "", o.tp, o.pp,
                  cl->max_model_len, describe_limits(limits));
  ServeLoop loop;
  loop.run = [&](const std::function<void()>& publish) { cl->run(publish); };
  loop.stop = [&] { cl->stop(); };
  // The server drains and exits once no replica can serve; a replica lost while others serve
  // is taken out of routing by the engine (its requests re-routed) and the job serves on.
  loop.fatal = [&] { return cl->backend->all_failed(); };
  const int rc = run_server(o, &bridge, &metrics, model, banner, loop, [&](nlohmann::json* j) {
    (*j)["model_file"] = o.model_path;
    (*j)["tp"] = o.tp;
    (*j)["pp"] = o.pp;
    (*j)["limits"] = limits;
  });
  // A replica whose ranks stopped answering: a normal shutdown would wait for them (the
  // workers' release, MPI_Finalize), so the job ends at once and its launcher restarts it.
  if (!cl->backend->any_failure().ok()) real::abort_job(rc);
  cl->shutdown();  // joins the executor's worker, releases the other ranks
  return rc;
}

}  // namespace prima::cli
