# MPIX_CHECK_CUDA: optional CUDA support.
#
# --with-cuda[=PREFIX]  require CUDA (at PREFIX), --without-cuda host-only;
# by default CUDA is used when nvcc is found. We link the static CUDA runtime,
# as NCCL does, so libmpix.so loads on machines without a GPU driver (the
# runtime finds libcuda.so.1 only when a CUDA call is made).
AC_DEFUN([MPIX_CHECK_CUDA], [
  AC_ARG_WITH([cuda],
    [AS_HELP_STRING([--with-cuda@<:@=PREFIX@:>@],
      [build GPU support with the CUDA toolkit at PREFIX (default: if nvcc is found)])],
    [], [with_cuda=check])
  AC_ARG_WITH([cuda-arch],
    [AS_HELP_STRING([--with-cuda-arch=LIST],
      [GPU compute capabilities to build for, space separated (default: 90)])],
    [], [with_cuda_arch=90])

  NVCC=
  CUDA_HOME=
  AS_CASE([$with_cuda],
    [no], [],
    [yes|check], [AC_PATH_PROG([NVCC], [nvcc], [], [$PATH$PATH_SEPARATOR/usr/local/cuda/bin])],
    [AS_IF([test -x "$with_cuda/bin/nvcc"], [NVCC="$with_cuda/bin/nvcc"],
       [AC_MSG_ERROR([--with-cuda=$with_cuda: no $with_cuda/bin/nvcc])])])
  AS_IF([test "x$with_cuda" = xyes && test -z "$NVCC"],
    [AC_MSG_ERROR([--with-cuda given but nvcc not found in PATH or /usr/local/cuda/bin; pass --with-cuda=PREFIX])])

  mpix_have_cuda=no
  AS_IF([test -n "$NVCC"], [
    CUDA_HOME=`dirname "$NVCC"`
    CUDA_HOME=`dirname "$CUDA_HOME"`
    CUDA_CPPFLAGS="-isystem $CUDA_HOME/include"
    mpix_cuda_libdir="$CUDA_HOME/lib64"
    test -d "$mpix_cuda_libdir" || mpix_cuda_libdir="$CUDA_HOME/lib"
    CUDA_LIBS="-L$mpix_cuda_libdir -lcudart_static -ldl -lrt -lpthread"
    mpix_save_CPPFLAGS=$CPPFLAGS
    mpix_save_LIBS=$LIBS
    CPPFLAGS="$CPPFLAGS $CUDA_CPPFLAGS"
    LIBS="$CUDA_LIBS $LIBS"
    AC_MSG_CHECKING([for a usable CUDA runtime in $CUDA_HOME])
    AC_LINK_IFELSE([AC_LANG_PROGRAM([[#include <cuda_runtime.h>]],
                                    [[int n; return cudaGetDeviceCount(&n) == cudaSuccess ? 0 : 1;]])],
      [AC_MSG_RESULT([yes]); mpix_have_cuda=yes],
      [AC_MSG_RESULT([no])])
    CPPFLAGS=$mpix_save_CPPFLAGS
    LIBS=$mpix_save_LIBS
    AS_IF([test "x$mpix_have_cuda" = xno && test "x$with_cuda" != xcheck],
      [AC_MSG_ERROR([CUDA requested but cuda_runtime.h/libcudart_static not usable under $CUDA_HOME])])
  ])

  NVCC_ARCHFLAGS=
  for mpix_arch in $with_cuda_arch; do
    NVCC_ARCHFLAGS="$NVCC_ARCHFLAGS -gencode=arch=compute_$mpix_arch,code=sm_$mpix_arch"
    mpix_last_arch=$mpix_arch
  done
  # PTX of the newest architecture lets newer GPUs JIT the kernels.
  AS_IF([test -n "$mpix_last_arch"],
    [NVCC_ARCHFLAGS="$NVCC_ARCHFLAGS -gencode=arch=compute_$mpix_last_arch,code=compute_$mpix_last_arch"])

  AS_IF([test "x$mpix_have_cuda" = xyes],
    [AC_DEFINE([MPIX_HAVE_CUDA], [1], [Define to 1 when built with CUDA support])
     MPIX_CUDA_SUMMARY="yes ($CUDA_HOME, arch $with_cuda_arch)"],
    [CUDA_CPPFLAGS=; CUDA_LIBS=; NVCC=
     MPIX_CUDA_SUMMARY="no (host-only library)"])
  MPIX_HAVE_CUDA_01=0
  test "x$mpix_have_cuda" = xyes && MPIX_HAVE_CUDA_01=1
  AM_CONDITIONAL([HAVE_CUDA], [test "x$mpix_have_cuda" = xyes])
  AC_SUBST([NVCC])
  AC_SUBST([NVCC_ARCHFLAGS])
  AC_SUBST([CUDA_HOME])
  AC_SUBST([CUDA_CPPFLAGS])
  AC_SUBST([CUDA_LIBS])
  AC_SUBST([MPIX_HAVE_CUDA_01])
])
