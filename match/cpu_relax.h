// One pause of a spinning thread: lets the core's sibling run and keeps a
// spin on a cache line from flooding the memory system. The matching
// engine's shard locks and the point-to-point engine's lock spin with it.
#ifndef MPIX_MATCH_CPU_RELAX_H_
#define MPIX_MATCH_CPU_RELAX_H_

namespace mpix::match {

inline void cpu_relax() {
#if defined(__x86_64__) || defined(__i386__)
  __builtin_ia32_pause();
#elif defined(__aarch64__)
  asm volatile("yield" ::: "memory");
#endif
}

}  // namespace mpix::match

#endif  // MPIX_MATCH_CPU_RELAX_H_
