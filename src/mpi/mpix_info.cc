// mpix_info: what this mpix was built with, every MPIX_* variable with its
// current value, default and meaning, and the MPI_T variables mpix adds.
// Needs no MPI_Init.
#include <cstdio>
#include <cstdlib>
#include <cstring>

#include "device/gpu.h"
#include "mpit_vars.h"
#include "mpix.h"
#include "progress/transport.h"
#include "src/config.h"

namespace {

// What MPI_T_cvar_get_info and MPI_T_pvar_get_info report (src/mpi/mpit.cc).
void print_mpit() {
  int n = 0;
  const mpix::ConfigVar *c = mpix::config_vars(&n);
  const mpix::Config in_force = [] {
    char ignored[8];
    return mpix::config_from_env(ignored, sizeof ignored);
  }();
  std::printf("# MPI_T control variables (read-only, no object; after the MPI library's own):\n");
  for (int i = 0; i < n; ++i)
    std::printf("cvar %-26s %-18s %s\n", c[i].name,
                c[i].value(in_force).is_word ? "char" : "unsigned long long",
                c[i].help);
  const mpix::mpit::Pvar *p = mpix::mpit::pvars(&n);
  std::printf("# MPI_T performance variables (unsigned long long, no object, continuous):\n");
  for (int i = 0; i < n; ++i)
    std::printf("pvar %-32s %-13s %s\n", p[i].name, mpix::mpit::class_name(p[i].var_class), p[i].desc);
}

// -s: the build in a few lines, and only the settings changed from their
// defaults (make demo prints this).
void print_summary() {
  char version[MPIX_MAX_LIBRARY_VERSION_STRING];
  int len = 0;
  MPIX_Get_library_version(version, &len);
  std::printf("%s\n", version);
  std::printf("transports built: %s; GPUs visible: %d\n", mpix::progress::transports_built(),
              mpix::device::device_count());
  int n = 0, changed = 0, np = 0;
  const mpix::ConfigVar *c = mpix::config_vars(&n);
  for (int i = 0; i < n; ++i)
    if (const char *v = std::getenv(c[i].name)) {
      std::printf("%s%s=%s", changed++ == 0 ? "settings changed: " : ", ", c[i].name, v);
    }
  if (changed > 0) std::printf("\n");
  mpix::mpit::pvars(&np);
  std::printf("%d MPIX_* settings (all at their defaults%s), %d MPI_T performance variables: mpix_info lists them\n",
              n, changed > 0 ? " but those above" : "", np);
}

}  // namespace

int main(int argc, char **argv) {
  const bool vars_only = argc > 1 && std::strcmp(argv[1], "-c") == 0;
  const bool mpit_only = argc > 1 && std::strcmp(argv[1], "-t") == 0;
  const bool summary = argc > 1 && std::strcmp(argv[1], "-s") == 0;
  if (argc > 2 || (argc > 1 && !vars_only && !mpit_only && !summary)) {
    std::fprintf(stderr,
                 "usage: %s [-c | -t | -s]\n  -c  print only the MPIX_* variables\n"
                 "  -t  print only the MPI_T variables mpix adds\n"
                 "  -s  a summary: build, transports, GPUs, settings changed from their defaults\n",
                 argv[0]);
    return 2;
  }
  if (summary) {
    print_summary();
    return 0;
  }
  if (mpit_only) {
    print_mpit();
    return 0;
  }
  if (!vars_only) {
    char version[MPIX_MAX_LIBRARY_VERSION_STRING];
    int len = 0;
    MPIX_Get_library_version(version, &len);
    std::printf("# %s\n", version);
    // Which transports this build has; MPIX_TRANSPORT picks one at MPI_Init.
    std::printf("# transports built: %s (MPIX_TRANSPORT=auto: ucx where UCX starts on every rank, else pmpi; ofi when named)\n",
                mpix::progress::transports_built());
    const int ngpu = mpix::device::device_count();
    std::printf("# GPUs visible: %d\n", ngpu);
    for (int d = 0; d < ngpu; ++d) {
      char desc[256];
      mpix::device::describe(d, desc, sizeof desc);
      std::printf("#   GPU %d: %s\n", d, desc);
    }
  }
  mpix::config_print(stdout, "");
  if (!vars_only) print_mpit();
  return 0;
}
