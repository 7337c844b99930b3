// A process-lifetime object that is never destroyed.
//
// A function-local static made after MPI_Init is destroyed at exit() before
// the atexit handler that stops mpix's threads runs (handlers and static
// destructors run in reverse order of registration), so a program that
// exits without MPI_Finalize would have its progress or liveness thread
// poll a freed registry. Registries those threads touch live here instead:
// no destructor is registered, and their memory stays reachable at exit.
#ifndef MPIX_PROGRESS_IMMORTAL_H
#define MPIX_PROGRESS_IMMORTAL_H

#include <new>
#include <utility>

namespace mpix {

template <class T>
class Immortal {
 public:
  template <class... Args>
  explicit Immortal(Args &&...args) {
    ::new (static_cast<void *>(storage_)) T(std::forward<Args>(args)...);
  }
  Immortal(const Immortal &) = delete;
  Immortal &operator=(const Immortal &) = delete;

  T &get() { return *std::launder(reinterpret_cast<T *>(storage_)); }

 private:
  alignas(T) unsigned char storage_[sizeof(T)];
};

}  // namespace mpix

#endif  // MPIX_PROGRESS_IMMORTAL_H
