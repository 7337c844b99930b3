# MPIX_CHECK_UCX: the UCX transport under the matching engine (progress/ucx).
#
# --with-ucx[=PREFIX] requires UCX (at PREFIX), --without-ucx leaves only the
# pmpi transport; by default UCX is used when ucp/api/ucp.h and libucp are
# found (Debian: libucx-dev). The library links libucp directly: Debian's
# MPICH and Open MPI already depend on the UCX runtime.
AC_DEFUN([MPIX_CHECK_UCX], [
  AC_ARG_WITH([ucx],
    [AS_HELP_STRING([--with-ucx@<:@=PREFIX@:>@],
      [build the UCX transport with UCX at PREFIX (default: if ucp/api/ucp.h and libucp are found)])],
    [], [with_ucx=check])
  UCX_CPPFLAGS=
  UCX_LIBS=
  mpix_have_ucx=no
  AS_CASE([$with_ucx],
    [no], [],
    [yes|check], [],
    [UCX_CPPFLAGS="-isystem $with_ucx/include"
     # lib64, Debian's multiarch folder (a prefix unpacked from .debs), lib.
     mpix_ucx_libdir="$with_ucx/lib"
     mpix_multiarch=`$CC -print-multiarch 2>/dev/null`
     test -n "$mpix_multiarch" && test -d "$with_ucx/lib/$mpix_multiarch" && mpix_ucx_libdir="$with_ucx/lib/$mpix_multiarch"
     test -d "$with_ucx/lib64" && mpix_ucx_libdir="$with_ucx/lib64"
     UCX_LIBS="-L$mpix_ucx_libdir -Wl,-rpath,$mpix_ucx_libdir"])
  AS_IF([test "x$with_ucx" != xno], [
    UCX_LIBS="$UCX_LIBS -lucp -lucs"
    mpix_save_CPPFLAGS=$CPPFLAGS
    mpix_save_LIBS=$LIBS
    CPPFLAGS="$CPPFLAGS $UCX_CPPFLAGS"
    LIBS="$UCX_LIBS $LIBS"
    AC_MSG_CHECKING([for UCP with active-message receive data (UCX >= 1.10)])
    AC_LINK_IFELSE([AC_LANG_PROGRAM([[#include <ucp/api/ucp.h>]],
                                    [[return ucp_am_recv_data_nbx(0, 0, 0, 0, 0) != 0;]])],
      [AC_MSG_RESULT([yes]); mpix_have_ucx=yes],
      [AC_MSG_RESULT([no])])
    CPPFLAGS=$mpix_save_CPPFLAGS
    LIBS=$mpix_save_LIBS
    AS_IF([test "x$mpix_have_ucx" = xno && test "x$with_ucx" != xcheck],
      [AC_MSG_ERROR([--with-ucx given but UCX (ucp/api/ucp.h, libucp >= 1.10) is not usable; Debian: apt-get install libucx-dev])])
  ])
  AS_IF([test "x$mpix_have_ucx" = xyes],
    [AC_DEFINE([MPIX_HAVE_UCX], [1], [Define to 1 when built with the UCX transport])
     MPIX_UCX_SUMMARY="yes ($UCX_LIBS)"],
    [UCX_CPPFLAGS=; UCX_LIBS=
     MPIX_UCX_SUMMARY="no (pmpi transport only)"])
  AM_CONDITIONAL([HAVE_UCX], [test "x$mpix_have_ucx" = xyes])
  AC_SUBST([UCX_CPPFLAGS])
  AC_SUBST([UCX_LIBS])
])
