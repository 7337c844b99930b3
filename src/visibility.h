// Symbol visibility: libmpix is built with -fvisibility=hidden, so only what
// is marked here leaves the library: the intercepted MPI_* entry points and
// the MPIX_* API (the linker version script src/libmpix.map enforces the same).
#ifndef MPIX_SRC_VISIBILITY_H
#define MPIX_SRC_VISIBILITY_H

#define MPIX_INTERCEPT extern "C" __attribute__((visibility("default")))

#endif
