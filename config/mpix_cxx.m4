# MPIX_REQUIRE_CXX17: stop unless the C++ compiler builds C++17 code.
AC_DEFUN([MPIX_REQUIRE_CXX17], [
  AC_MSG_CHECKING([whether $CXX supports -std=c++17])
  mpix_save_CXXFLAGS=$CXXFLAGS
  CXXFLAGS="$CXXFLAGS -std=c++17"
  AC_COMPILE_IFELSE([AC_LANG_PROGRAM([[#include <optional>]],
                                     [[std::optional<int> x{1}; if constexpr (true) return *x;]])],
    [AC_MSG_RESULT([yes])],
    [AC_MSG_RESULT([no]); AC_MSG_ERROR([a C++17 compiler is required (g++ >= 8 or clang++ >= 7)])])
  CXXFLAGS=$mpix_save_CXXFLAGS
])

# MPIX_IF_CXX_FLAG(FLAG, ACTION): ACTION when the C++ compiler accepts FLAG.
AC_DEFUN([MPIX_IF_CXX_FLAG], [
  mpix_save_CXXFLAGS=$CXXFLAGS
  CXXFLAGS="$CXXFLAGS -Werror $1"
  AC_COMPILE_IFELSE([AC_LANG_PROGRAM([], [])], [$2], [])
  CXXFLAGS=$mpix_save_CXXFLAGS
])
