/*
 * mpix device point-to-point: moving payload bytes. The cooperative copy
 * the rings use, and the loads and stores of inline payloads (at most
 * MPIXD_INLINE bytes) between buffers of any alignment and registers.
 * Part of proto.h.
 */
#ifndef MPIX_DEVICE_BYTES_H
#define MPIX_DEVICE_BYTES_H

#include "types.h"

typedef struct __attribute__((aligned(16))) mpixd_w16 {
  uint64_t a, b;
} mpixd_w16;

/* Copies n bytes, lane `lane` of `lanes` cooperating threads doing its
 * share (16-byte words when both sides allow it; four words in flight per
 * lane, loaded before any is stored). */
MPIXD_HD void mpixd_copy(void *dst, const void *src, size_t n, unsigned lane, unsigned lanes) {
  unsigned char *d = (unsigned char *)dst;
  const unsigned char *s = (const unsigned char *)src;
  size_t done = 0;
  if ((((uintptr_t)d | (uintptr_t)s) & 15) == 0) {
    /* Aligned to 16 so that nvcc emits one 128-bit access per word (with
     * the natural 8-byte alignment it splits every word into two 64-bit
     * accesses, twice the NVLink transactions). Only used on 16-byte
     * aligned pointers: vector accesses on unaligned user buffers fault. */
    mpixd_w16 *dw = (mpixd_w16 *)d;
    const mpixd_w16 *sw = (const mpixd_w16 *)s;
    const size_t words = n / 16;
    size_t i = lane;
    for (; i + 3 * (size_t)lanes < words; i += 4 * (size_t)lanes) {
      const mpixd_w16 a = sw[i], b = sw[i + lanes], c = sw[i + 2 * (size_t)lanes], e = sw[i + 3 * (size_t)lanes];
      dw[i] = a;
      dw[i + lanes] = b;
      dw[i + 2 * (size_t)lanes] = c;
      dw[i + 3 * (size_t)lanes] = e;
    }
    /* The rest, at most three words a lane, loaded together before any is
     * stored: a store may alias the next load, so one word per iteration
     * waited a whole load each (a remote source: one NVLink round trip per
     * word; a 32 KiB pull by 1024 lanes took two instead of one). */
    const int has = (i < words) + (i + lanes < words) + (i + 2 * (size_t)lanes < words);
    mpixd_w16 t0 = {0, 0}, t1 = {0, 0}, t2 = {0, 0};
    if (has > 0) t0 = sw[i];
    if (has > 1) t1 = sw[i + lanes];
    if (has > 2) t2 = sw[i + 2 * (size_t)lanes];
    if (has > 0) dw[i] = t0;
    if (has > 1) dw[i + lanes] = t1;
    if (has > 2) dw[i + 2 * (size_t)lanes] = t2;
    done = words * 16;
  }
  for (size_t i = done + lane; i < n; i += lanes) d[i] = s[i];
}

/* Copies an inline payload (n <= MPIXD_INLINE) from a buffer of any
 * alignment into 32 bytes of registers, with the widest loads it allows. */
MPIXD_HD void mpixd_inline_load(mpixd_w16 w[2], const void *src, size_t n) {
  w[0].a = w[0].b = w[1].a = w[1].b = 0;
  const uintptr_t a = (uintptr_t)src;
  if ((a & 15) == 0 && n == MPIXD_INLINE) {
    w[0] = ((const mpixd_w16 *)src)[0];
    w[1] = ((const mpixd_w16 *)src)[1];
  } else if ((a & 7) == 0) {
    uint64_t *o = (uint64_t *)w;
    size_t i = 0;
    for (; i + 8 <= n; i += 8) o[i / 8] = ((const uint64_t *)src)[i / 8];
    for (; i < n; ++i) ((unsigned char *)w)[i] = ((const unsigned char *)src)[i];
  } else {
    for (size_t i = 0; i < n; ++i) ((unsigned char *)w)[i] = ((const unsigned char *)src)[i];
  }
}

/* The reverse: n bytes of 32 bytes of registers into a buffer. */
MPIXD_HD void mpixd_inline_store(void *dst, const mpixd_w16 w[2], size_t n) {
  const uintptr_t a = (uintptr_t)dst;
  if ((a & 15) == 0 && n == MPIXD_INLINE) {
    ((mpixd_w16 *)dst)[0] = w[0];
    ((mpixd_w16 *)dst)[1] = w[1];
  } else if ((a & 7) == 0) {
    const uint64_t *o = (const uint64_t *)w;
    size_t i = 0;
    for (; i + 8 <= n; i += 8) ((uint64_t *)dst)[i / 8] = o[i / 8];
    for (; i < n; ++i) ((unsigned char *)dst)[i] = ((const unsigned char *)w)[i];
  } else {
    for (size_t i = 0; i < n; ++i) ((unsigned char *)dst)[i] = ((const unsigned char *)w)[i];
  }
}

#endif
