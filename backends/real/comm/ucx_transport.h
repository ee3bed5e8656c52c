// UCX transport: one UCP context + worker per process (TAG feature), an endpoint to every
// other rank, worker addresses exchanged with MPI_Allgather. Messages are tagged sends and
// receives; the 64-bit UCX tag is [source rank:16][context:15][internal:1][value:32], received
// with a full mask so a recv matches one peer, one context, one tag. Waits progress the
// worker (busy, yielding the CPU when idle) and are bounded by timeout_s.
//
// UCX reads its configuration from the environment (UCX_TLS, UCX_NET_DEVICES, ...): nothing
// is forced here; see docs/communicator.md. Not thread-safe (UCS_THREAD_MODE_SINGLE).
#pragma once

#include <mpi.h>

#include <memory>

#include "backends/real/comm/transport.h"

namespace prima::real::comm {

// The ranks of `comm` (MPI_COMM_WORLD, or a sub-communicator: a replica's ranks, a relay
// pair); the transport's ranks and peers are ranks of `comm`. Requires MPI to be initialised;
// every rank of `comm` calls it (collective). owns_comm: the transport frees `comm` when it
// is destroyed (after its teardown barrier, before MPI_Finalize).
Result<std::unique_ptr<Transport>> make_ucx_transport(double timeout_s,
                                                      MPI_Comm comm = MPI_COMM_WORLD,
                                                      bool owns_comm = false);

}  // namespace prima::real::comm
