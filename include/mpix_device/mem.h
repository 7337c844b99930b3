/*
 * mpix device point-to-point: the memory operations the protocol is built
 * of, in a device flavour (PTX with the scope and ordering each needs) and
 * a host flavour (C11/C++ atomics) for the host tests, where host threads
 * play the GPU threads. Not a public interface: names start with mpixd_.
 */
#ifndef MPIX_DEVICE_MEM_H
#define MPIX_DEVICE_MEM_H

#include <stddef.h>
#include <stdint.h>

#if defined(__CUDACC__)
#define MPIXD_HD __host__ __device__ __forceinline__
/* Loops that keep many loads in flight: a call of their own, so that the
 * register pressure of the caller (a kernel of 512 threads gets 128) does
 * not spill their batch, each load then waited for before the next. */
#define MPIXD_HD_LOOP inline __host__ __device__ __noinline__
#elif defined(__cplusplus)
#define MPIXD_HD inline
#define MPIXD_HD_LOOP inline
#else
#define MPIXD_HD static inline
#define MPIXD_HD_LOOP static inline
#endif
#ifndef __cplusplus
#include <stdbool.h>
#endif

#if !defined(__CUDA_ARCH__)
#include <sched.h>
#endif

/* Unrolls the loop after it in device code (where a batch's registers must
 * not become local memory); nothing on the host. */
#if defined(__CUDA_ARCH__)
#define MPIXD_UNROLL _Pragma("unroll")
#else
#define MPIXD_UNROLL
#endif

/* ---- memory primitives: device and host flavours ---- */

MPIXD_HD uint32_t mpixd_load_acquire(const uint32_t *p) {
#if defined(__CUDA_ARCH__)
  uint32_t v;
  asm volatile("ld.acquire.sys.u32 %0, [%1];" : "=r"(v) : "l"(p) : "memory");
  return v;
#else
  return __atomic_load_n(p, __ATOMIC_ACQUIRE);
#endif
}

MPIXD_HD void mpixd_store_release(uint32_t *p, uint32_t v) {
#if defined(__CUDA_ARCH__)
  asm volatile("st.release.sys.u32 [%0], %1;" ::"l"(p), "r"(v) : "memory");
#else
  __atomic_store_n(p, v, __ATOMIC_RELEASE);
#endif
}

MPIXD_HD uint32_t mpixd_load_relaxed(const uint32_t *p) {
#if defined(__CUDA_ARCH__)
  return *(const volatile uint32_t *)p;
#else
  return __atomic_load_n(p, __ATOMIC_RELAXED);
#endif
}

/* For words other threads read without synchronising (peeks, dumps). */
MPIXD_HD void mpixd_store_relaxed(uint32_t *p, uint32_t v) {
#if defined(__CUDA_ARCH__)
  *(volatile uint32_t *)p = v;
#else
  __atomic_store_n(p, v, __ATOMIC_RELAXED);
#endif
}

MPIXD_HD uint64_t mpixd_load_acquire64(const uint64_t *p) {
#if defined(__CUDA_ARCH__)
  uint64_t v;
  asm volatile("ld.acquire.sys.u64 %0, [%1];" : "=l"(v) : "l"(p) : "memory");
  return v;
#else
  return __atomic_load_n(p, __ATOMIC_ACQUIRE);
#endif
}

MPIXD_HD uint64_t mpixd_load_relaxed64(const uint64_t *p) {
#if defined(__CUDA_ARCH__)
  return *(const volatile uint64_t *)p;
#else
  return __atomic_load_n(p, __ATOMIC_RELAXED);
#endif
}

MPIXD_HD void mpixd_store_release64(uint64_t *p, uint64_t v) {
#if defined(__CUDA_ARCH__)
  asm volatile("st.release.sys.u64 [%0], %1;" ::"l"(p), "l"(v) : "memory");
#else
  __atomic_store_n(p, v, __ATOMIC_RELEASE);
#endif
}

MPIXD_HD void mpixd_store_relaxed64(uint64_t *p, uint64_t v) {
#if defined(__CUDA_ARCH__)
  *(volatile uint64_t *)p = v;
#else
  __atomic_store_n(p, v, __ATOMIC_RELAXED);
#endif
}

/* Compare-and-swap within this GPU (key tables, locks); returns the old value. */
MPIXD_HD uint32_t mpixd_cas(uint32_t *p, uint32_t expect, uint32_t desired) {
#if defined(__CUDA_ARCH__)
  return atomicCAS(p, expect, desired);
#else
  __atomic_compare_exchange_n(p, &expect, desired, false, __ATOMIC_ACQ_REL, __ATOMIC_RELAXED);
  return expect;
#endif
}

MPIXD_HD uint64_t mpixd_cas64(uint64_t *p, uint64_t expect, uint64_t desired) {
#if defined(__CUDA_ARCH__)
  return atomicCAS((unsigned long long *)p, (unsigned long long)expect, (unsigned long long)desired);
#else
  __atomic_compare_exchange_n(p, &expect, desired, false, __ATOMIC_ACQ_REL, __ATOMIC_RELAXED);
  return expect;
#endif
}

/* The same synchronisations at the scope a peer needs: GPU scope when it
 * runs on this GPU (its memory is this GPU's and its threads share this
 * GPU's L2: no system-wide ordering needed), system scope otherwise. */
MPIXD_HD uint32_t mpixd_load_acquire_at(const uint32_t *p, bool near) {
#if defined(__CUDA_ARCH__)
  uint32_t v;
  if (near) asm volatile("ld.acquire.gpu.u32 %0, [%1];" : "=r"(v) : "l"(p) : "memory");
  else asm volatile("ld.acquire.sys.u32 %0, [%1];" : "=r"(v) : "l"(p) : "memory");
  return v;
#else
  (void)near;
  return __atomic_load_n(p, __ATOMIC_ACQUIRE);
#endif
}

MPIXD_HD void mpixd_store_release_at(uint32_t *p, uint32_t v, bool near) {
#if defined(__CUDA_ARCH__)
  if (near) asm volatile("st.release.gpu.u32 [%0], %1;" ::"l"(p), "r"(v) : "memory");
  else asm volatile("st.release.sys.u32 [%0], %1;" ::"l"(p), "r"(v) : "memory");
#else
  (void)near;
  __atomic_store_n(p, v, __ATOMIC_RELEASE);
#endif
}

MPIXD_HD uint64_t mpixd_load_acquire64_at(const uint64_t *p, bool near) {
#if defined(__CUDA_ARCH__)
  uint64_t v;
  if (near) asm volatile("ld.acquire.gpu.u64 %0, [%1];" : "=l"(v) : "l"(p) : "memory");
  else asm volatile("ld.acquire.sys.u64 %0, [%1];" : "=l"(v) : "l"(p) : "memory");
  return v;
#else
  (void)near;
  return __atomic_load_n(p, __ATOMIC_ACQUIRE);
#endif
}

MPIXD_HD void mpixd_store_release64_at(uint64_t *p, uint64_t v, bool near) {
#if defined(__CUDA_ARCH__)
  if (near) asm volatile("st.release.gpu.u64 [%0], %1;" ::"l"(p), "l"(v) : "memory");
  else asm volatile("st.release.sys.u64 [%0], %1;" ::"l"(p), "l"(v) : "memory");
#else
  (void)near;
  __atomic_store_n(p, v, __ATOMIC_RELEASE);
#endif
}

MPIXD_HD uint32_t mpixd_cas_acquire_at(uint32_t *p, uint32_t expect, uint32_t desired, bool near) {
#if defined(__CUDA_ARCH__)
  uint32_t old;
  if (near)
    asm volatile("atom.acquire.gpu.global.cas.b32 %0, [%1], %2, %3;"
                 : "=r"(old)
                 : "l"(p), "r"(expect), "r"(desired)
                 : "memory");
  else
    asm volatile("atom.acquire.sys.global.cas.b32 %0, [%1], %2, %3;"
                 : "=r"(old)
                 : "l"(p), "r"(expect), "r"(desired)
                 : "memory");
  return old;
#else
  (void)near;
  __atomic_compare_exchange_n(p, &expect, desired, false, __ATOMIC_ACQUIRE, __ATOMIC_RELAXED);
  return expect;
#endif
}

MPIXD_HD void mpixd_and_release_at(uint32_t *p, uint32_t v, bool near) {
#if defined(__CUDA_ARCH__)
  if (near) asm volatile("red.release.gpu.global.and.b32 [%0], %1;" ::"l"(p), "r"(v) : "memory");
  else asm volatile("red.release.sys.global.and.b32 [%0], %1;" ::"l"(p), "r"(v) : "memory");
#else
  (void)near;
  (void)__atomic_fetch_and(p, v, __ATOMIC_RELEASE);
#endif
}

/* The same without the release: for a caller whose earlier accesses that
 * matter have all returned their values, and whose `v` depends on them
 * (so the operation cannot issue before they are performed). */
MPIXD_HD void mpixd_and_relaxed_at(uint32_t *p, uint32_t v, bool near) {
#if defined(__CUDA_ARCH__)
  if (near) asm volatile("red.relaxed.gpu.global.and.b32 [%0], %1;" ::"l"(p), "r"(v) : "memory");
  else asm volatile("red.relaxed.sys.global.and.b32 [%0], %1;" ::"l"(p), "r"(v) : "memory");
#else
  (void)near;
  (void)__atomic_fetch_and(p, v, __ATOMIC_RELEASE);  /* what ThreadSanitizer can follow */
#endif
}

/* A relaxed store at the scope a peer needs, for a caller whose `v`
 * depends on the values of its earlier accesses that matter (see
 * mpixd_and_relaxed_at). */
MPIXD_HD void mpixd_store_relaxed_at(uint32_t *p, uint32_t v, bool near) {
#if defined(__CUDA_ARCH__)
  if (near) asm volatile("st.relaxed.gpu.global.u32 [%0], %1;" ::"l"(p), "r"(v) : "memory");
  else asm volatile("st.relaxed.sys.global.u32 [%0], %1;" ::"l"(p), "r"(v) : "memory");
#else
  (void)near;
  __atomic_store_n(p, v, __ATOMIC_RELEASE); /* what ThreadSanitizer can follow */
#endif
}

/* 0, computed from x through a copy the compiler cannot see through, so
 * that it depends on x (a load's value): an access whose address or value
 * adds it cannot issue before that load is performed. */
MPIXD_HD uint32_t mpixd_zero_of(uint64_t x) {
#if defined(__CUDA_ARCH__)
  uint64_t y;
  asm volatile("mov.b64 %0, %1;" : "=l"(y) : "l"(x));
  y ^= x;
  return (uint32_t)(y | y >> 32);
#else
  (void)x;
  return 0;
#endif
}

/* Orders this thread's earlier writes before later ones as a peer sees
 * them (the block variants' chunk copies before their sequence words). */
MPIXD_HD void mpixd_fence_at(bool near) {
#if defined(__CUDA_ARCH__)
  if (near) __threadfence();
  else __threadfence_system();
#else
  (void)near;
  __atomic_thread_fence(__ATOMIC_SEQ_CST);
#endif
}

MPIXD_HD uint32_t mpixd_fetch_add(uint32_t *p, uint32_t v) {
#if defined(__CUDA_ARCH__)
  return atomicAdd(p, v);
#else
  return __atomic_fetch_add(p, v, __ATOMIC_ACQ_REL);
#endif
}

/* A sequentially consistent fence among this GPU's threads (the
 * store-then-load hand-over of mpixd_ring_release). */
MPIXD_HD void mpixd_fence_sc(void) {
#if defined(__CUDA_ARCH__)
  __threadfence();
#else
  __atomic_thread_fence(__ATOMIC_SEQ_CST);
#endif
}

/* Exponential backoff for wait loops: sleeps *ns (device; a yield on the
 * host), then doubles it up to max_ns. Waiters on the proxy path poll
 * completion records in host memory across PCIe, where thousands of
 * threads polling flat out crowd out the traffic they wait for. */
MPIXD_HD void mpixd_backoff(unsigned *ns, unsigned max_ns) {
#if defined(__CUDA_ARCH__)
  __nanosleep(*ns);
#else
  sched_yield();
#endif
  if (*ns < max_ns) *ns *= 2;
}

/* The ring release lock is only ever tried, never waited for: a thread that
 * does not get it leaves the work to the holder. Lanes of a warp that spin
 * on a lock together share a convergence barrier after the spin loop (nvcc:
 * BSSY before it, BSYNC after it), where the lane that won the lock waits
 * for its warp-mates that spin on the lock it holds; with one queue for
 * many threads that stalled dev_p2p on an H200 (2026-11-23). */
MPIXD_HD bool mpixd_try_lock(uint32_t *l) {
  if (mpixd_load_relaxed(l) != 0 || mpixd_cas(l, 0, 1) != 0) return false;
#if defined(__CUDA_ARCH__)
  __threadfence();
#endif
  return true;
}

MPIXD_HD void mpixd_unlock(uint32_t *l) {
#if defined(__CUDA_ARCH__)
  __threadfence();
  atomicExch(l, 0u);
#else
  __atomic_store_n(l, 0u, __ATOMIC_RELEASE);
#endif
}

MPIXD_HD unsigned mpixd_ctz(uint32_t x) {
#if defined(__CUDA_ARCH__)
  return (unsigned)(__ffs((int)x) - 1);
#else
  return (unsigned)__builtin_ctz(x);
#endif
}

/* a - b between wrapping 32-bit counters. */
MPIXD_HD int32_t mpixd_diff(uint32_t a, uint32_t b) { return (int32_t)(a - b); }

#endif
