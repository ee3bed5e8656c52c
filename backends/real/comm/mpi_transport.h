// MPI transport: the same messages over MPI point-to-point (MPI_Isend / MPI_Irecv, polled
// with MPI_Test until timeout_s). A fallback where UCX misbehaves and a reference in tests.
// Each context is its own MPI communicator (MPI_Comm_create_group over the group's ranks);
// the MPI tag is value + 2^30 for internal messages. Not thread-safe.
#pragma once

#include <memory>

#include "backends/real/comm/transport.h"

namespace prima::real::comm {

// Requires MPI to be initialised; every world rank calls it.
Result<std::unique_ptr<Transport>> make_mpi_transport(double timeout_s);

}  // namespace prima::real::comm
