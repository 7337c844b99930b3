// mpix_info: what this mpix was built with and every MPIX_* variable with its
// current value, default and meaning. Needs no MPI_Init.
#include <cstdio>
#include <cstring>

#include "config.h"
#include "device/gpu.h"
#include "mpix.h"
#include "progress/transport.h"

int main(int argc, char **argv) {
  const bool vars_only = argc > 1 && std::strcmp(argv[1], "-c") == 0;
  if (argc > 1 && !vars_only) {
    std::fprintf(stderr, "usage: %s [-c]\n  -c  print only the MPIX_* variables\n", argv[0]);
    return 2;
  }
  if (!vars_only) {
    char version[MPIX_MAX_LIBRARY_VERSION_STRING];
    int len = 0;
    MPIX_Get_library_version(version, &len);
    std::printf("# %s\n", version);
    // Which transports this build has; MPIX_TRANSPORT picks one at MPI_Init.
    std::printf("# transports built: %s (MPIX_TRANSPORT=auto: ucx where UCX starts on every rank, else pmpi)\n",
                mpix::progress::transports_built());
    const int ngpu = mpix::gpu::device_count();
    std::printf("# GPUs visible: %d\n", ngpu);
    for (int d = 0; d < ngpu; ++d) {
      char desc[256];
      mpix::gpu::describe(d, desc, sizeof desc);
      std::printf("#   GPU %d: %s\n", d, desc);
    }
  }
  mpix::config_print(stdout, "");
  return 0;
}
