/* ktrace: a CUDA injection library that writes every kernel's GPU start and
 * end (and the host's launch calls) to a CSV per process, for timelines on
 * the GPU machine, which has no Nsight Systems.
 *
 *   CUDA_INJECTION64_PATH=bench/libktrace.so KTRACE_DIR=dir  program ...
 *
 * writes dir/ktrace.<rank>.<pid>.csv (rank from PMI_RANK, else -1) with rows
 *   kernel,<device>,<stream>,<start ns>,<end ns>,<queued>,<submitted>,<grid>,<block>,<name>
 *   api,<thread>,<cbid>,<start ns>,<end ns>,<correlation>,,,,<launch name or ->
 * Timestamps are CUPTI's (host-synchronised nanoseconds), so kernels of two
 * GPUs in one process line up, and processes of one host roughly do.
 * Tracing costs each launch a little; a timeline read from it is for where
 * time goes, the benchmark's own untraced figures for how much. */
#include <cupti.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

enum { kBufferBytes = 8 << 20 };

static FILE *out;

static void CUPTIAPI buffer_requested(uint8_t **buffer, size_t *size, size_t *max_records) {
  *buffer = (uint8_t *)aligned_alloc(8, kBufferBytes);
  *size = *buffer != NULL ? kBufferBytes : 0;
  *max_records = 0;
}

static void write_record(const CUpti_Activity *r) {
  if (r->kind == CUPTI_ACTIVITY_KIND_CONCURRENT_KERNEL || r->kind == CUPTI_ACTIVITY_KIND_KERNEL) {
    const CUpti_ActivityKernel10 *k = (const CUpti_ActivityKernel10 *)r;
    fprintf(out, "kernel,%u,%u,%llu,%llu,%llu,%llu,%d,%d,%s\n", k->deviceId, k->streamId,
            (unsigned long long)k->start, (unsigned long long)k->end, (unsigned long long)k->queued,
            (unsigned long long)k->submitted, k->gridX, k->blockX, k->name != NULL ? k->name : "?");
  } else if (r->kind == CUPTI_ACTIVITY_KIND_RUNTIME || r->kind == CUPTI_ACTIVITY_KIND_DRIVER) {
    const CUpti_ActivityAPI *a = (const CUpti_ActivityAPI *)r;
    fprintf(out, "api,%u,%u,%llu,%llu,%u,,,,%s\n", a->threadId, a->cbid, (unsigned long long)a->start,
            (unsigned long long)a->end, a->correlationId, r->kind == CUPTI_ACTIVITY_KIND_RUNTIME ? "runtime" : "driver");
  }
}

static void CUPTIAPI buffer_completed(CUcontext ctx, uint32_t stream, uint8_t *buffer, size_t size, size_t valid) {
  (void)ctx;
  (void)stream;
  (void)size;
  CUpti_Activity *r = NULL;
  while (out != NULL && cuptiActivityGetNextRecord(buffer, valid, &r) == CUPTI_SUCCESS) write_record(r);
  size_t dropped = 0;
  if (cuptiActivityGetNumDroppedRecords(ctx, stream, &dropped) == CUPTI_SUCCESS && dropped > 0 && out != NULL)
    fprintf(out, "dropped,%zu\n", dropped);
  free(buffer);
}

static void finish(void) {
  cuptiActivityFlushAll(CUPTI_ACTIVITY_FLAG_FLUSH_FORCED);
  if (out != NULL) fclose(out);
  out = NULL;
}

/* Called by the CUDA driver at cuInit when CUDA_INJECTION64_PATH names us. */
__attribute__((visibility("default"))) int InitializeInjection(void) {
  const char *dir = getenv("KTRACE_DIR");
  const char *rank = getenv("PMI_RANK");
  char path[4096];
  snprintf(path, sizeof path, "%s/ktrace.%s.%ld.csv", dir != NULL ? dir : ".", rank != NULL ? rank : "-1",
           (long)getpid());
  out = fopen(path, "w");
  if (out == NULL) {
    perror("ktrace: fopen");
    return 0;
  }
  if (cuptiActivityRegisterCallbacks(buffer_requested, buffer_completed) != CUPTI_SUCCESS ||
      cuptiActivityEnable(CUPTI_ACTIVITY_KIND_CONCURRENT_KERNEL) != CUPTI_SUCCESS) {
    fprintf(stderr, "ktrace: CUPTI refused kernel tracing\n");
    return 0;
  }
  if (getenv("KTRACE_API") != NULL) cuptiActivityEnable(CUPTI_ACTIVITY_KIND_RUNTIME);
  atexit(finish);
  return 1;
}
