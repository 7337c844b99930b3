# MPIX_CHECK_MPI: find the MPI library mpix interposes on.
#
# We compile with the plain C/C++ compilers and take MPI's flags from its
# wrapper, because libmpix must link libmpi itself (the PMPI_* entry points it
# forwards to) and must not drag in MPI's C++ bindings.
# Sets MPICC, MPIEXEC, MPI_CPPFLAGS, MPI_LIBS, MPI_LIBDIR, MPIX_MPI_IMPL.
AC_DEFUN([MPIX_CHECK_MPI], [
  AC_ARG_WITH([mpi],
    [AS_HELP_STRING([--with-mpi=PREFIX],
      [MPI installation to interpose on (default: the mpicc found in PATH)])],
    [], [with_mpi=check])
  AS_IF([test "x$with_mpi" = xno],
    [AC_MSG_ERROR([mpix is an MPI library extension: --without-mpi is not possible])])

  AC_ARG_VAR([MPI_CPPFLAGS], [MPI preprocessor flags (skips asking the MPI compiler wrapper)])
  AC_ARG_VAR([MPI_LIBS], [MPI link flags (skips asking the MPI compiler wrapper)])
  AC_ARG_VAR([MPIEXEC], [MPI launcher used by the tests and the demo])
  mpix_mpi_path=$PATH
  AS_IF([test "x$with_mpi" != xcheck && test "x$with_mpi" != xyes], [mpix_mpi_path="$with_mpi/bin"])
  AS_IF([test -z "$MPIEXEC"],
    [AC_PATH_PROGS([MPIEXEC], [mpiexec mpiexec.hydra mpirun], [], [$mpix_mpi_path])])
  AS_IF([test -n "$MPI_LIBS"],
    [MPIX_MPI_SOURCE="given by MPI_CPPFLAGS/MPI_LIBS"
     MPI_LIBDIR=`echo " $MPI_LIBS" | sed -n 's/.* -L\([[^ ]]*\).*/\1/p'`],
    [_MPIX_MPI_FLAGS_FROM_WRAPPER])
  AS_IF([test -z "$MPIEXEC"],
    [AC_MSG_ERROR([MPI found but no mpiexec/mpirun next to it; tests need a launcher (set MPIEXEC=)])])

  mpix_save_CPPFLAGS=$CPPFLAGS
  mpix_save_LIBS=$LIBS
  CPPFLAGS="$CPPFLAGS $MPI_CPPFLAGS"
  LIBS="$MPI_LIBS $LIBS"
  AC_CHECK_HEADER([mpi.h], [],
    [AC_MSG_ERROR([mpi.h not found with $MPI_CPPFLAGS (is the MPI development package installed? Debian: libmpich-dev)])])
  AC_MSG_CHECKING([whether MPI provides the PMPI profiling interface])
  AC_LINK_IFELSE([AC_LANG_PROGRAM([[#include <mpi.h>]],
                                  [[return PMPI_Init((int *)0, (char ***)0);]])],
    [AC_MSG_RESULT([yes])],
    [AC_MSG_RESULT([no]); AC_MSG_ERROR([cannot link PMPI_Init with $MPI_LIBS])])
  AC_MSG_CHECKING([for MPI-3.1 or newer])
  AC_COMPILE_IFELSE([AC_LANG_PROGRAM([[#include <mpi.h>]],
      [[#if MPI_VERSION < 3 || (MPI_VERSION == 3 && MPI_SUBVERSION < 1)
        #error too old
        #endif]])],
    [AC_MSG_RESULT([yes])],
    [AC_MSG_RESULT([no]); AC_MSG_ERROR([mpix needs an MPI-3.1 or newer library])])
  AC_COMPILE_IFELSE([AC_LANG_PROGRAM([[#include <mpi.h>]],
      [[#ifndef MPICH_VERSION
        #error not mpich
        #endif]])],
    [MPIX_MPI_IMPL=MPICH],
    [AC_COMPILE_IFELSE([AC_LANG_PROGRAM([[#include <mpi.h>]],
        [[#ifndef OMPI_MAJOR_VERSION
          #error not ompi
          #endif]])],
      [MPIX_MPI_IMPL="Open MPI"], [MPIX_MPI_IMPL="unknown MPI"])])
  CPPFLAGS=$mpix_save_CPPFLAGS
  LIBS=$mpix_save_LIBS

  # Open MPI's launcher refuses root (CI and the GPU machine run as root) and
  # needs oversubscription on small machines; MPICH's hydra needs neither.
  MPIEXEC_FLAGS=
  AS_IF([test "x$MPIX_MPI_IMPL" = "xOpen MPI"],
    [MPIEXEC_FLAGS="--oversubscribe --allow-run-as-root"])

  AC_SUBST([MPICC])
  AC_SUBST([MPIX_MPI_SOURCE])
  AC_SUBST([MPIEXEC])
  AC_SUBST([MPIEXEC_FLAGS])
  AC_SUBST([MPI_CPPFLAGS])
  AC_SUBST([MPI_LIBS])
  AC_SUBST([MPI_LIBDIR])
  AC_SUBST([MPIX_MPI_IMPL])
])

# _MPIX_MPI_FLAGS_FROM_WRAPPER: MPI_CPPFLAGS/MPI_LIBS from mpicc.
AC_DEFUN([_MPIX_MPI_FLAGS_FROM_WRAPPER], [
  AS_IF([test "x$with_mpi" = xcheck || test "x$with_mpi" = xyes],
    [AC_PATH_PROGS([MPICC], [mpicc mpicc.mpich mpicc.openmpi])],
    [AC_PATH_PROGS([MPICC], [mpicc mpicc.mpich mpicc.openmpi], [], [$with_mpi/bin])])
  AS_IF([test -z "$MPICC"],
    [AC_MSG_ERROR([no MPI found: install one (Debian: apt-get install mpich libmpich-dev) or pass --with-mpi=PREFIX of an installation that has bin/mpicc])])

  # MPICH answers -compile_info/-link_info, Open MPI --showme:compile/--showme:link.
  AC_MSG_CHECKING([MPI compile and link flags])
  mpix_mpi_compile=`$MPICC -compile_info 2>/dev/null`
  mpix_mpi_link=`$MPICC -link_info 2>/dev/null`
  AS_IF([test -z "$mpix_mpi_compile"],
    [mpix_mpi_compile="cc `$MPICC --showme:compile 2>/dev/null`"
     mpix_mpi_link="cc `$MPICC --showme:link 2>/dev/null`"])
  MPI_CPPFLAGS=
  MPI_LIBS=
  MPI_LIBDIR=
  for mpix_f in $mpix_mpi_compile; do
    case $mpix_f in
      # -isystem: our -Werror must not judge the MPI library's headers.
      -I*) MPI_CPPFLAGS="$MPI_CPPFLAGS -isystem `echo $mpix_f | sed 's/^-I//'`" ;;
      -D*|-pthread) MPI_CPPFLAGS="$MPI_CPPFLAGS $mpix_f" ;;
    esac
  done
  for mpix_f in $mpix_mpi_link; do
    case $mpix_f in
      -L*) MPI_LIBS="$MPI_LIBS $mpix_f"
           test -z "$MPI_LIBDIR" && MPI_LIBDIR=`echo $mpix_f | sed 's/^-L//'` ;;
      -l*|-pthread|-Wl,-rpath*|-Wl,--enable-new-dtags) MPI_LIBS="$MPI_LIBS $mpix_f" ;;
    esac
  done
  AC_MSG_RESULT([$MPI_CPPFLAGS $MPI_LIBS])

  MPIX_MPI_SOURCE="$MPICC"
])
