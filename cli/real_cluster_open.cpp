// Opening the real backend for a command (see real_backend_open.h).
#include "cli/real_backend_open.h"

#include <cstdio>

#include "cli/commands.h"

namespace prima::cli {

std::unique_ptr<real::RealBackend> open_real_backend(const real::RealBackendOptions& bo,
                                                     bool repack_asked, const char* command,
                                                     int* exit_code) {
  auto opened = real::RealBackend::open(bo);
  if (!opened.ok()) {
    std::fprintf(stderr, "%s: %s\n", command, opened.status().message().c_str());
    const StatusCode c = opened.status().code();
    *exit_code = c == StatusCode::kInvalidArgument || c == StatusCode::kNotFound ? kExitBadInput
                                                                                 : kExitFailure;
    return nullptr;
  }
  if (repack_asked && !(*opened)->repacked() && (*opened)->is_leader())
    std::fprintf(stderr,
                 "%s: --repack: this CPU has no AVX-512 VNNI packed kernels; the weights keep "
                 "the GGUF layout\n",
                 command);
  return std::move(*opened);
}

int run_real_worker(real::RealBackend* backend, const char* command) {
  Status st = backend->run_worker();
  if (!st.ok()) {
    std::fprintf(stderr, "%s (worker): %s\n", command, st.message().c_str());
    return kExitFailure;
  }
  return kExitOk;
}

}  // namespace prima::cli
