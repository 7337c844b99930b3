/* What mpix is for, in a few seconds: a receiver with thousands of
 * receives outstanding. A plain MPI program (no mpix header, no -lmpix):
 * `make demo` runs it natively and under LD_PRELOAD=libmpix.so and prints
 * the two side by side (examples/demo.sh).
 *
 * Rank 1 receives N messages from rank 0 on a communicator that asserts
 * "no wildcards" (MPI-4 info keys mpi_assert_no_any_source/_any_tag, which
 * the MPI library may ignore and mpix uses to match by hash tables):
 *   posted      rank 1 posts N receives (tags 0..N-1), rank 0 sends the tags
 *               in reverse, so each message matches the last posted receive
 *               (a linear posted queue walks all of it);
 *   unexpected  rank 0 sends N messages first, rank 1 receives them newest
 *               first (a linear unexpected queue walks all of it);
 *   region      as posted, inside MPIX_Unordered_region_open/close (mpix
 *               only: receives may match out of order; they are batched
 *               where MPIX_REGION_BATCH_MIN entries already wait).
 * Each line: "result <test> <matches per second>"; every payload is checked
 * ("payload check: ok"). Options: -n N (default 8192), -r rounds (best of,
 * default 3). */
#include <dlfcn.h>
#include <mpi.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static int rank, errors;

/* MPIX functions, when libmpix is loaded (looked up at run time, so the
 * same binary runs natively). */
typedef int (*comm_fn)(MPI_Comm);
typedef int (*handled_fn)(MPI_Comm, int *);

static void check(int got, int want, const char *test) {
  if (got != want && errors++ < 5) fprintf(stderr, "[rank %d] %s: payload %d, expected %d\n", rank, test, got, want);
}

/* One round of a test; returns the receiver's matches per second. */
static double round_of(MPI_Comm comm, int n, const char *test, comm_fn open_region, comm_fn close_region) {
  int *buf = malloc((size_t)n * sizeof *buf);
  MPI_Request *reqs = malloc((size_t)n * sizeof *reqs);
  double t = 0;
  const int unexpected = strcmp(test, "unexpected") == 0;
  MPI_Barrier(comm);
  if (rank == 0) {
    if (unexpected) {
      for (int k = 0; k < n; ++k) {
        buf[k] = k;
        MPI_Isend(&buf[k], 1, MPI_INT, 1, k, comm, &reqs[k]);
      }
      MPI_Barrier(comm); /* all sent before the first receive */
      MPI_Waitall(n, reqs, MPI_STATUSES_IGNORE);
    } else {
      MPI_Barrier(comm); /* all receives posted */
      for (int k = n - 1; k >= 0; --k) {
        buf[k] = k;
        MPI_Send(&buf[k], 1, MPI_INT, 1, k, comm);
      }
    }
  } else if (rank == 1) {
    if (unexpected) {
      MPI_Barrier(comm);
      t = MPI_Wtime();
      for (int k = n - 1; k >= 0; --k) MPI_Recv(&buf[k], 1, MPI_INT, 0, k, comm, MPI_STATUS_IGNORE);
    } else {
      if (open_region) open_region(comm);
      t = MPI_Wtime();
      for (int k = 0; k < n; ++k) MPI_Irecv(&buf[k], 1, MPI_INT, 0, k, comm, &reqs[k]);
      MPI_Barrier(comm);
      MPI_Waitall(n, reqs, MPI_STATUSES_IGNORE);
      if (close_region) close_region(comm);
    }
    t = MPI_Wtime() - t;
    for (int k = 0; k < n; ++k) check(buf[k], k, test);
  } else {
    MPI_Barrier(comm);
  }
  free(buf);
  free(reqs);
  return t > 0 ? n / t : 0;
}

static void run(MPI_Comm comm, int n, int rounds, const char *test, comm_fn open_region, comm_fn close_region) {
  double best = 0;
  for (int r = 0; r < rounds; ++r) {
    const double rate = round_of(comm, n, test, open_region, close_region);
    if (rate > best) best = rate;
  }
  if (rank == 1) {
    printf("result %s %.0f\n", test, best);
    fflush(stdout);
  }
}

int main(int argc, char **argv) {
  int n = 8192, rounds = 3, size = 0;
  for (int i = 1; i + 1 < argc; i += 2) {
    if (strcmp(argv[i], "-n") == 0) n = atoi(argv[i + 1]);
    else if (strcmp(argv[i], "-r") == 0) rounds = atoi(argv[i + 1]);
  }
  MPI_Init(&argc, &argv);
  MPI_Comm_rank(MPI_COMM_WORLD, &rank);
  MPI_Comm_size(MPI_COMM_WORLD, &size);
  if (size < 2) {
    if (rank == 0) printf("needs 2 ranks\n");
    MPI_Finalize();
    return 1;
  }
  MPI_Info info;
  MPI_Info_create(&info);
  MPI_Info_set(info, "mpi_assert_no_any_source", "true");
  MPI_Info_set(info, "mpi_assert_no_any_tag", "true");
  MPI_Comm comm;
  MPI_Comm_dup_with_info(MPI_COMM_WORLD, info, &comm);
  MPI_Info_free(&info);

  handled_fn is_handled = (handled_fn)dlsym(RTLD_DEFAULT, "MPIX_Comm_is_handled");
  comm_fn open_region = (comm_fn)dlsym(RTLD_DEFAULT, "MPIX_Unordered_region_open");
  comm_fn close_region = (comm_fn)dlsym(RTLD_DEFAULT, "MPIX_Unordered_region_close");
  int handled = 0;
  if (is_handled) is_handled(comm, &handled);
  if (rank == 0) {
    printf("mpix loaded: %s; no-wildcard communicator handled by mpix: %s\n", is_handled ? "yes" : "no",
           handled ? "yes" : "no");
    printf("receives outstanding: %d, best of %d rounds\n", n, rounds);
    fflush(stdout);
  }
  run(comm, n, rounds, "posted", NULL, NULL);
  run(comm, n, rounds, "unexpected", NULL, NULL);
  if (handled && open_region && close_region) run(comm, n, rounds, "region", open_region, close_region);

  int total = 0;
  MPI_Allreduce(&errors, &total, 1, MPI_INT, MPI_SUM, MPI_COMM_WORLD);
  if (rank == 0) printf("payload check: %s\n", total == 0 ? "ok" : "FAILED");
  MPI_Comm_free(&comm);
  MPI_Finalize();
  return total != 0;
}
