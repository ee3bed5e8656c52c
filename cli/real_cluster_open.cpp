// Opening the real backend's cluster for a command (see real_cluster_open.h).
#include "cli/real_cluster_open.h"

#include <cstdio>

#include "cli/commands.h"
#include "cli/flags.h"

namespace prima::cli {

std::unique_ptr<real::RealCluster> open_real_cluster(const real::RealBackendOptions& bo,
                                                     bool repack_asked, const char* command,
                                                     int* exit_code) {
  auto opened = real::open_real_cluster(bo);
  if (!opened.ok()) {
    *exit_code = fail_with(command, opened.status());
    return nullptr;
  }
  const real::RealBackend& backend = *(*opened)->backend;
  if (repack_asked && !backend.repacked() && backend.is_leader())
    std::fprintf(stderr,
                 "%s: --repack: this CPU has no AVX-512 VNNI packed kernels; the weights keep "
                 "the GGUF layout\n",
                 command);
  return std::move(*opened);
}

int run_real_worker(real::RealCluster* cluster, const char* command) {
  Status st = cluster->run_worker();
  if (!st.ok()) {
    std::fprintf(stderr, "%s (worker): %s\n", command, st.message().c_str());
    return kExitFailure;
  }
  return kExitOk;
}

}  // namespace prima::cli
