// Opening the real backend's cluster (backends/real/real_cluster.h) for the commands that run
// a GGUF model (`prima generate`, `prima serve --backend real`), and running the ranks other
// than 0, which execute the leader's steps: the messages and exit codes around them.
// `command` ("prima generate") starts every line printed. Not thread-safe (prints).
#pragma once

#include <memory>

#include "backends/real/real_cluster.h"

namespace prima::cli {

// The cluster, or null with "COMMAND: why" printed and *exit_code set (2: the model file or
// the options are bad, 1: anything else). Where --repack was asked for (`repack_asked`) and
// the CPU has no packed kernels, rank 0 prints a note and the weights keep the GGUF layout.
std::unique_ptr<real::RealCluster> open_real_cluster(const real::RealBackendOptions& bo,
                                                     bool repack_asked, const char* command,
                                                     int* exit_code);

// A rank other than 0: executes the leader's steps until it shuts down; the exit code.
int run_real_worker(real::RealCluster* cluster, const char* command);

}  // namespace prima::cli
