# MPIX_CHECK_GTEST: GoogleTest for the engine's unit tests (Debian: libgtest-dev).
# Unit tests are part of `make check`, so a missing GoogleTest is an error
# unless --without-gtest says to build the library alone.
AC_DEFUN([MPIX_CHECK_GTEST], [
  AC_ARG_WITH([gtest],
    [AS_HELP_STRING([--without-gtest], [do not build the GoogleTest unit tests])],
    [], [with_gtest=yes])
  GTEST_CPPFLAGS=
  GTEST_LIBS=
  MPIX_GTEST_SUMMARY=no
  AS_IF([test "x$with_gtest" != xno], [
    mpix_save_LIBS=$LIBS
    mpix_save_CXXFLAGS=$CXXFLAGS
    LIBS="-lgtest -pthread $LIBS"
    CXXFLAGS="$CXXFLAGS -std=c++17"
    AC_MSG_CHECKING([for GoogleTest])
    AC_LINK_IFELSE([AC_LANG_PROGRAM([[#include <gtest/gtest.h>]],
                                    [[testing::InitGoogleTest(); return 0;]])],
      [AC_MSG_RESULT([yes]); GTEST_LIBS="-lgtest -lgtest_main -pthread"; MPIX_GTEST_SUMMARY=yes],
      [AC_MSG_RESULT([no])
       AC_MSG_ERROR([GoogleTest not found (Debian: apt-get install libgtest-dev); use --without-gtest to skip unit tests])])
    LIBS=$mpix_save_LIBS
    CXXFLAGS=$mpix_save_CXXFLAGS
  ])
  AM_CONDITIONAL([HAVE_GTEST], [test "x$MPIX_GTEST_SUMMARY" = xyes])
  AC_SUBST([GTEST_CPPFLAGS])
  AC_SUBST([GTEST_LIBS])
])
