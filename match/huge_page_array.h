// Fixed-size array of trivially copyable elements whose large instances are
// backed by transparent huge pages where the system offers them
// (madvise(MADV_HUGEPAGE)). At depth 1M every hash probe lands on a random
// page: with 4 KiB pages that is a TLB miss (and, under virtualisation, a
// two-dimensional page walk) on top of the cache miss.
#ifndef MPIX_MATCH_HUGE_PAGE_ARRAY_H_
#define MPIX_MATCH_HUGE_PAGE_ARRAY_H_

#include <cstddef>
#include <cstdlib>
#include <memory>
#include <new>
#include <type_traits>
#include <utility>

#if defined(__linux__)
#include <sys/mman.h>
#endif

namespace mpix::match::detail {

template <class T>
class HugePageArray {
  static_assert(std::is_trivially_copyable_v<T>, "elements are copied as bytes");

 public:
  HugePageArray() = default;
  HugePageArray(std::size_t n, const T& fill) : size_(n) {
    if (n == 0) return;
    const std::size_t bytes = n * sizeof(T);
    const bool huge = bytes >= kHugePage;
    const std::size_t align = huge ? kHugePage : 64;
    const std::size_t rounded = (bytes + align - 1) / align * align;
    data_.reset(static_cast<T*>(std::aligned_alloc(align, rounded)));
    if (!data_) throw std::bad_alloc();
#if defined(__linux__) && defined(MADV_HUGEPAGE)
    if (huge) madvise(data_.get(), rounded, MADV_HUGEPAGE);  // a hint: failure is harmless
#endif
    for (std::size_t i = 0; i < n; ++i) data_[i] = fill;
  }

  T& operator[](std::size_t i) { return data_[i]; }
  const T& operator[](std::size_t i) const { return data_[i]; }
  T* data() { return data_.get(); }
  T* begin() { return data_.get(); }
  T* end() { return data_.get() + size_; }
  std::size_t size() const { return size_; }
  void swap(HugePageArray& other) noexcept {
    std::swap(data_, other.data_);
    std::swap(size_, other.size_);
  }

 private:
  static constexpr std::size_t kHugePage = std::size_t{2} << 20;
  struct Free {
    void operator()(T* p) const { std::free(p); }
  };
  std::unique_ptr<T[], Free> data_;
  std::size_t size_ = 0;
};

}  // namespace mpix::match::detail

#endif  // MPIX_MATCH_HUGE_PAGE_ARRAY_H_
