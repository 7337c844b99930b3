// Process-wide state of the library between MPI_Init and MPI_Finalize.
#ifndef MPIX_SRC_RUNTIME_H
#define MPIX_SRC_RUNTIME_H

#include <mpi.h>

#include "config.h"

namespace mpix {

struct Runtime {
  Config config;
  int thread_provided = MPI_THREAD_SINGLE;  // what the application was told
  int world_rank = 0;
  int world_size = 1;
};

// True between a successful MPI_Init* and MPI_Finalize.
bool runtime_active();

// Valid only while runtime_active().
const Runtime &runtime();

// Called by the MPI_Init/MPI_Init_thread/MPI_Finalize hooks after PMPI_Init*
// and before PMPI_Finalize; return MPI error codes.
int runtime_start(int thread_provided);
int runtime_stop();

}  // namespace mpix

#endif
