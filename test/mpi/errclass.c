/* The library's error classes exist after MPI_Init, are distinct dynamic
 * classes, and MPI_Error_string describes them. */
#include "mpix.h"
#include "mtest.h"

static void check_class(int cls, const char *name) {
  char text[MPI_MAX_ERROR_STRING];
  int len = 0;
  MTEST_CHECK(cls > MPI_ERR_LASTCODE, "%s = %d is not a dynamic class", name, cls);
  MTEST_CHECK(mtest_class(cls) == cls, "MPI_Error_class(%s) = %d", name, mtest_class(cls));
  MTEST_CHECK(MPI_Error_string(cls, text, &len) == MPI_SUCCESS, "no string for %s", name);
  MTEST_CHECK(strstr(text, name) != NULL, "string of %s is \"%s\"", name, text);
}

int main(int argc, char **argv) {
  MPI_Init(&argc, &argv);
  check_class(MPIX_ERR_WILDCARD, "MPIX_ERR_WILDCARD");
  check_class(MPIX_ERR_REGION, "MPIX_ERR_REGION");
  check_class(MPIX_ERR_NO_CUDA, "MPIX_ERR_NO_CUDA");
  check_class(MPIX_ERR_QUEUE_FULL, "MPIX_ERR_QUEUE_FULL");
  const int classes[] = {MPIX_ERR_WILDCARD, MPIX_ERR_REGION, MPIX_ERR_NO_CUDA, MPIX_ERR_QUEUE_FULL};
  for (int i = 0; i < 4; i++)
    for (int j = i + 1; j < 4; j++) MTEST_CHECK(classes[i] != classes[j], "classes %d and %d equal", i, j);

  /* MPI_LASTUSEDCODE covers them, as MPI requires of dynamic codes. */
  int *last = NULL, flag = 0;
  MPI_Comm_get_attr(MPI_COMM_WORLD, MPI_LASTUSEDCODE, &last, &flag);
  MTEST_CHECK(flag && *last >= MPIX_ERR_QUEUE_FULL, "MPI_LASTUSEDCODE %d", flag ? *last : -1);
  return mtest_finalize();
}
