# MPIX_CHECK_OFI: the libfabric transport under the matching engine
# (progress/ofi*).
#
# --with-ofi[=PREFIX] requires libfabric (at PREFIX), --without-ofi leaves it
# out; by default it is built when rdma/fabric.h and libfabric >= 1.9 are
# found (Debian: libfabric-dev). The library links libfabric directly, as it
# links libucp: the provider is chosen at run time (FI_PROVIDER,
# MPIX_OFI_PROVIDER), not at build time.
AC_DEFUN([MPIX_CHECK_OFI], [
  AC_ARG_WITH([ofi],
    [AS_HELP_STRING([--with-ofi@<:@=PREFIX@:>@],
      [build the libfabric transport with libfabric at PREFIX (default: if rdma/fabric.h and libfabric are found)])],
    [], [with_ofi=check])
  OFI_CPPFLAGS=
  OFI_LIBS=
  mpix_have_ofi=no
  AS_CASE([$with_ofi],
    [no], [],
    [yes|check], [],
    [OFI_CPPFLAGS="-isystem $with_ofi/include"
     # lib64, Debian's multiarch folder (a prefix unpacked from .debs), lib.
     mpix_ofi_libdir="$with_ofi/lib"
     mpix_multiarch=`$CC -print-multiarch 2>/dev/null`
     test -n "$mpix_multiarch" && test -d "$with_ofi/lib/$mpix_multiarch" && mpix_ofi_libdir="$with_ofi/lib/$mpix_multiarch"
     test -d "$with_ofi/lib64" && mpix_ofi_libdir="$with_ofi/lib64"
     OFI_LIBS="-L$mpix_ofi_libdir -Wl,-rpath,$mpix_ofi_libdir"])
  AS_IF([test "x$with_ofi" != xno], [
    OFI_LIBS="$OFI_LIBS -lfabric"
    mpix_save_CPPFLAGS=$CPPFLAGS
    mpix_save_LIBS=$LIBS
    CPPFLAGS="$CPPFLAGS $OFI_CPPFLAGS"
    LIBS="$OFI_LIBS $LIBS"
    # fi_getinfo at API 1.9 (FI_MR_* mode bits, fi_info's nic field era) and
    # the RMA and tagged calls the transport makes.
    AC_MSG_CHECKING([for libfabric with API 1.9 or later])
    AC_LINK_IFELSE([AC_LANG_PROGRAM([[#include <rdma/fabric.h>
#include <rdma/fi_rma.h>
#if FI_VERSION_LT(FI_VERSION(FI_MAJOR_VERSION, FI_MINOR_VERSION), FI_VERSION(1, 9))
#error libfabric older than 1.9
#endif]],
                                    [[struct fi_info *i = fi_allocinfo();
  int rc = fi_getinfo(FI_VERSION(1, 9), 0, 0, 0, i, 0);
  fi_freeinfo(i);
  return rc == 0 && fi_strerror(0) == 0;]])],
      [AC_MSG_RESULT([yes]); mpix_have_ofi=yes],
      [AC_MSG_RESULT([no])])
    CPPFLAGS=$mpix_save_CPPFLAGS
    LIBS=$mpix_save_LIBS
    AS_IF([test "x$mpix_have_ofi" = xno && test "x$with_ofi" != xcheck],
      [AC_MSG_ERROR([--with-ofi given but libfabric (rdma/fabric.h, libfabric >= 1.9) is not usable; Debian: apt-get install libfabric-dev])])
  ])
  AS_IF([test "x$mpix_have_ofi" = xyes],
    [MPIX_OFI_SUMMARY="yes ($OFI_LIBS)"],
    [OFI_CPPFLAGS=; OFI_LIBS=
     MPIX_OFI_SUMMARY="no"])
  AM_CONDITIONAL([HAVE_OFI], [test "x$mpix_have_ofi" = xyes])
  AC_SUBST([OFI_CPPFLAGS])
  AC_SUBST([OFI_LIBS])
])
