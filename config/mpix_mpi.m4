# MPIX_CHECK_MPI: find the MPI library mpix interposes on.
#
# We compile with the plain C/C++ compilers and take MPI's flags from its
# wrapper, because libmpix must link libmpi itself (the PMPI_* entry points it
# forwards to) and must not drag in MPI's C++ bindings.
#
# --with-mpi takes a prefix with bin/mpicc, or one of Debian's layout, where
# several MPIs share /usr/bin and a prefix has only include/ and lib/
# (/usr/lib/x86_64-linux-gnu/openmpi): then the wrapper is the mpicc.FLAVOUR
# whose include directory is that prefix's. --with-mpi=openmpi (mpich) names
# such a flavour directly. The launcher is taken from the same installation
# (mpiexec.FLAVOUR beside mpicc.FLAVOUR): the mpiexec in PATH may be another
# MPI's, and a job launched by a foreign launcher runs as N singletons.
# Sets MPICC, MPIEXEC, MPIEXEC_FLAGS, MPI_CPPFLAGS, MPI_LIBS, MPI_LIBDIR,
# MPIX_MPI_IMPL.
AC_DEFUN([MPIX_CHECK_MPI], [
  AC_ARG_WITH([mpi],
    [AS_HELP_STRING([--with-mpi=PREFIX|openmpi|mpich],
      [MPI installation to interpose on: a prefix (with bin/mpicc, or Debian's
       /usr/lib/<triplet>/openmpi), or a Debian flavour name whose
       mpicc.NAME/mpiexec.NAME to use (default: the mpicc found in PATH)])],
    [], [with_mpi=check])
  AS_IF([test "x$with_mpi" = xno],
    [AC_MSG_ERROR([mpix is an MPI library extension: --without-mpi is not possible])])

  AC_ARG_VAR([MPICC], [MPI C compiler wrapper to ask for the MPI flags (e.g. mpicc.openmpi)])
  AC_ARG_VAR([MPI_CPPFLAGS], [MPI preprocessor flags (skips asking the MPI compiler wrapper)])
  AC_ARG_VAR([MPI_LIBS], [MPI link flags (skips asking the MPI compiler wrapper)])
  AC_ARG_VAR([MPIEXEC], [MPI launcher used by the tests and the demo])
  AC_ARG_VAR([MPIEXEC_FLAGS], [launcher options for the tests and the demo (default: per MPI library)])
  # Where to look for the launcher, and its Debian flavour suffix (".openmpi").
  mpix_mpi_path=$PATH
  mpix_mpi_flavour=
  AS_CASE([$with_mpi],
    [check|yes], [],
    [*/*], [AS_IF([test -d "$with_mpi/bin"], [mpix_mpi_path="$with_mpi/bin"])],
    [mpix_mpi_flavour=".$with_mpi"])
  AS_IF([test -n "$MPI_LIBS"],
    [MPIX_MPI_SOURCE="given by MPI_CPPFLAGS/MPI_LIBS"
     MPI_LIBDIR=`echo " $MPI_LIBS" | sed -n 's/.* -L\([[^ ]]*\).*/\1/p'`],
    [_MPIX_MPI_FLAGS_FROM_WRAPPER])

  # The library is C++ and uses MPI's C interface only: the MPI C++
  # bindings' classes would otherwise be compiled into every object, and
  # Open MPI's need libmpi_cxx, which libmpix must not link (Open MPI
  # honours OMPI_SKIP_MPICXX, MPICH MPICH_SKIP_MPICXX). Our own build's
  # flags only (MPIX_MPI_DEFS, below): a consumer's C++ may want them.
  MPIX_MPI_DEFS="-DOMPI_SKIP_MPICXX=1 -DMPICH_SKIP_MPICXX=1"
  mpix_save_CPPFLAGS=$CPPFLAGS
  mpix_save_LIBS=$LIBS
  CPPFLAGS="$CPPFLAGS $MPI_CPPFLAGS $MPIX_MPI_DEFS"
  LIBS="$MPI_LIBS $LIBS"
  AC_CHECK_HEADER([mpi.h], [],
    [AC_MSG_ERROR([mpi.h not found with $MPI_CPPFLAGS (is the MPI development package installed? Debian: libmpich-dev or libopenmpi-dev)])])
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
  AC_MSG_CHECKING([which MPI library])
  AC_COMPUTE_INT([mpix_v1], [MPICH_NUMVERSION / 10000000], [[#include <mpi.h>]], [mpix_v1=])
  AS_IF([test -n "$mpix_v1"],
    [AC_COMPUTE_INT([mpix_v2], [MPICH_NUMVERSION / 100000 % 100], [[#include <mpi.h>]])
     AC_COMPUTE_INT([mpix_v3], [MPICH_NUMVERSION / 1000 % 100], [[#include <mpi.h>]])
     MPIX_MPI_IMPL=MPICH],
    [AC_COMPUTE_INT([mpix_v1], [OMPI_MAJOR_VERSION], [[#include <mpi.h>]], [mpix_v1=])
     AS_IF([test -n "$mpix_v1"],
       [AC_COMPUTE_INT([mpix_v2], [OMPI_MINOR_VERSION], [[#include <mpi.h>]])
        AC_COMPUTE_INT([mpix_v3], [OMPI_RELEASE_VERSION], [[#include <mpi.h>]])
        MPIX_MPI_IMPL="Open MPI"],
       [MPIX_MPI_IMPL="unknown MPI"])])
  AS_IF([test -n "$mpix_v1"], [MPIX_MPI_IMPL="$MPIX_MPI_IMPL $mpix_v1.$mpix_v2.$mpix_v3"])
  AC_MSG_RESULT([$MPIX_MPI_IMPL])

  # MPI-4 functions mpix intercepts where the library has them (MPICH 4.0
  # has all; Open MPI 4.1 none; Open MPI 5 some, while it still says MPI
  # 3.1): a library that lacks one gets no wrapper for it, and the tests
  # that call it leave that part out. Handed to the compiler as -D flags
  # (MPIX_MPI_DEFS, in AM_CPPFLAGS): config.h would be shadowed by
  # src/config.h in the library's quoted includes.
  _MPIX_MPI_HAVE_FUNC([PMPI_Isendrecv_replace], [MPIX_HAVE_MPI_ISENDRECV])
  _MPIX_MPI_HAVE_FUNC([PMPI_Sendrecv_replace_c], [MPIX_HAVE_MPI_LARGE_COUNT])
  _MPIX_MPI_HAVE_FUNC([PMPI_Comm_idup_with_info], [MPIX_HAVE_MPI_COMM_IDUP_WITH_INFO])
  _MPIX_MPI_HAVE_FUNC([PMPI_Comm_create_from_group], [MPIX_HAVE_MPI_SESSIONS])
  AC_SUBST([MPIX_MPI_DEFS])
  CPPFLAGS=$mpix_save_CPPFLAGS
  LIBS=$mpix_save_LIBS

  AS_IF([test -z "$MPIEXEC"], [_MPIX_MPI_FIND_LAUNCHER])
  AS_IF([test -z "$MPIEXEC"],
    [AC_MSG_ERROR([MPI found but no mpiexec/mpirun next to it; tests need a launcher (set MPIEXEC=)])])
  # A launcher of another MPI starts N singletons that never meet: the
  # tests would fail in confusing ways, so say it here.
  AC_MSG_CHECKING([whether $MPIEXEC is $MPIX_MPI_IMPL's launcher])
  mpix_launcher=`$MPIEXEC --version 2>&1 </dev/null | head -n 5`
  AS_CASE(["$MPIX_MPI_IMPL:$mpix_launcher"],
    [MPICH*:*OpenRTE*|MPICH*:*Open\ MPI*], [mpix_launcher_ok=no],
    [Open\ MPI*:*HYDRA*|Open\ MPI*:*mpich*], [mpix_launcher_ok=no],
    [mpix_launcher_ok=yes])
  AC_MSG_RESULT([$mpix_launcher_ok])
  AS_IF([test $mpix_launcher_ok = no],
    [AC_MSG_ERROR([$MPIEXEC is not the launcher of $MPIX_MPI_IMPL (whose mpi.h configure found): set MPIEXEC= to it (Debian: mpirun.openmpi for Open MPI, mpiexec.mpich for MPICH)])])

  # Open MPI's launcher refuses root (CI and the GPU machine run as root)
  # and refuses more ranks than cores (the tests start up to 8 on 2 cores);
  # MPICH's hydra needs neither.
  AS_IF([test -z "${MPIEXEC_FLAGS+set}"],
    [MPIEXEC_FLAGS=
     AS_CASE([$MPIX_MPI_IMPL], [Open\ MPI*], [MPIEXEC_FLAGS="--oversubscribe --allow-run-as-root"])])

  AC_SUBST([MPICC])
  AC_SUBST([MPIX_MPI_SOURCE])
  AC_SUBST([MPIEXEC])
  AC_SUBST([MPIEXEC_FLAGS])
  AC_SUBST([MPI_CPPFLAGS])
  AC_SUBST([MPI_LIBS])
  AC_SUBST([MPI_LIBDIR])
  AC_SUBST([MPIX_MPI_IMPL])
])

# _MPIX_MPI_HAVE_FUNC(FUNCTION, MACRO): -DMACRO=1 into MPIX_MPI_DEFS when
# the MPI library links FUNCTION.
AC_DEFUN([_MPIX_MPI_HAVE_FUNC], [
  AC_MSG_CHECKING([for $1])
  AC_LINK_IFELSE([AC_LANG_PROGRAM([[#include <mpi.h>]], [[void (*f)(void) = (void (*)(void))&$1; return f == 0;]])],
    [AC_MSG_RESULT([yes]); MPIX_MPI_DEFS="$MPIX_MPI_DEFS -D$2=1"],
    [AC_MSG_RESULT([no])])
])

# _MPIX_MPI_FIND_LAUNCHER: MPIEXEC from the MPI found above: the same Debian
# flavour as the wrapper (mpicc.openmpi -> mpirun.openmpi), else the
# installation's bin/, else PATH.
AC_DEFUN([_MPIX_MPI_FIND_LAUNCHER], [
  AS_IF([test -z "$mpix_mpi_flavour" && test -n "$MPICC"],
    [AS_CASE([`basename "$MPICC"`], [mpicc.*], [mpix_mpi_flavour=`basename "$MPICC" | sed 's/^mpicc//'`])])
  AS_IF([test -n "$mpix_mpi_flavour"],
    [AC_PATH_PROGS([MPIEXEC], [mpiexec$mpix_mpi_flavour mpirun$mpix_mpi_flavour], [], [$mpix_mpi_path])])
  AS_IF([test -z "$MPIEXEC"],
    [AC_PATH_PROGS([MPIEXEC], [mpiexec mpiexec.hydra mpirun], [], [$mpix_mpi_path])])
])

# _MPIX_MPI_FLAGS_FROM_WRAPPER: MPI_CPPFLAGS/MPI_LIBS from mpicc.
AC_DEFUN([_MPIX_MPI_FLAGS_FROM_WRAPPER], [
  # A wrapper named without a directory (MPICC=mpicc.openmpi) is looked up
  # in PATH; AC_PATH_PROGS alone would search for its own list instead.
  AS_CASE([$MPICC],
    [""|/*], [],
    [mpix_mpicc_name=$MPICC
     MPICC=
     AC_PATH_PROG([MPICC], [$mpix_mpicc_name])
     AS_IF([test -z "$MPICC"], [AC_MSG_ERROR([MPICC=$mpix_mpicc_name not found in PATH])])])
  AS_IF([test -z "$MPICC"],
    [AS_CASE([$with_mpi],
      [check|yes], [AC_PATH_PROGS([MPICC], [mpicc mpicc.mpich mpicc.openmpi])],
      [*/*], [AS_IF([test -x "$with_mpi/bin/mpicc"],
                [MPICC="$with_mpi/bin/mpicc"],
                [_MPIX_MPI_WRAPPER_FOR_PREFIX])],
      [AC_PATH_PROG([MPICC], [mpicc$mpix_mpi_flavour])
       AS_IF([test -z "$MPICC"],
         [AC_MSG_ERROR([--with-mpi=$with_mpi: no mpicc$mpix_mpi_flavour in PATH (Debian: apt-get install lib$with_mpi-dev; or pass a prefix)])])])])
  AS_IF([test -z "$MPICC"],
    [AC_MSG_ERROR([no MPI found: install one (Debian: apt-get install mpich libmpich-dev) or pass --with-mpi=PREFIX of an installation that has bin/mpicc])])

  # MPICH answers -compile_info/-link_info, Open MPI --showme:compile/--showme:link.
  AC_MSG_CHECKING([MPI compile and link flags])
  _MPIX_MPI_WRAPPER_FLAGS([$MPICC])
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

# _MPIX_MPI_WRAPPER_FLAGS(WRAPPER): its compile and link lines in
# mpix_mpi_compile/mpix_mpi_link.
AC_DEFUN([_MPIX_MPI_WRAPPER_FLAGS], [
  mpix_mpi_compile=`$1 -compile_info 2>/dev/null`
  mpix_mpi_link=`$1 -link_info 2>/dev/null`
  AS_IF([test -z "$mpix_mpi_compile"],
    [mpix_mpi_compile="cc `$1 --showme:compile 2>/dev/null`"
     mpix_mpi_link="cc `$1 --showme:link 2>/dev/null`"])
])

# _MPIX_MPI_WRAPPER_FOR_PREFIX: Debian's layout, a prefix without bin/: the
# mpicc.FLAVOUR in PATH whose include directory is $with_mpi/include.
AC_DEFUN([_MPIX_MPI_WRAPPER_FOR_PREFIX], [
  AS_IF([test ! -f "$with_mpi/include/mpi.h"],
    [AC_MSG_ERROR([--with-mpi=$with_mpi: neither $with_mpi/bin/mpicc nor $with_mpi/include/mpi.h exists])])
  mpix_want=`cd "$with_mpi/include" && pwd -P`
  AC_MSG_CHECKING([for the MPI compiler wrapper of $with_mpi])
  for mpix_w in mpicc.openmpi mpicc.mpich; do
    mpix_wp=`command -v $mpix_w 2>/dev/null` || continue
    _MPIX_MPI_WRAPPER_FLAGS([$mpix_wp])
    for mpix_f in $mpix_mpi_compile; do
      case $mpix_f in
        -I*) mpix_d=`echo $mpix_f | sed 's/^-I//'`
             test -d "$mpix_d" && test "x`cd "$mpix_d" && pwd -P`" = "x$mpix_want" && MPICC=$mpix_wp ;;
      esac
    done
    test -n "$MPICC" && break
  done
  AS_IF([test -n "$MPICC"],
    [AC_MSG_RESULT([$MPICC])
     mpix_mpi_flavour=`basename "$MPICC" | sed 's/^mpicc//'`],
    [AC_MSG_RESULT([none])
     AC_MSG_ERROR([--with-mpi=$with_mpi: no bin/mpicc there and no mpicc.openmpi/mpicc.mpich in PATH using $with_mpi/include; give MPICC=, or MPI_CPPFLAGS=, MPI_LIBS= and MPIEXEC=])])
])
