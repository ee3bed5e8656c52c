// MPI bootstrap for the process: MPI_Init_thread once, MPI_Finalize once (by the world
// transport's destructor). MPI errors return codes instead of aborting the job. Call from
// the thread that drives the communicator.
#pragma once

#include <mpi.h>

#include <string>

#include "engine/core/status.h"

namespace prima::real::comm {

// Initialises MPI (MPI_THREAD_SERIALIZED) unless already done; error if it was finalized.
Status mpi_init_once();
void mpi_finalize_once();
// Ends every rank of the job now (MPI_Abort: the launcher stops the other ranks) when MPI is
// initialised, else exits; for a job whose ranks no longer answer, where MPI_Finalize would
// wait for them forever.
[[noreturn]] void mpi_abort_job(int code);
// "MPI_Isend: MPI_ERR_TRUNCATE: message truncated" for an MPI error code.
std::string mpi_error_string(const char* call, int code);

}  // namespace prima::real::comm
