// Which sanitizer this translation unit is built under (GCC defines
// __SANITIZE_*__, Clang answers __has_feature): code that a sanitizer
// cannot model, or whose purpose it defeats, asks here.
#ifndef MPIX_PROGRESS_SANITIZERS_H
#define MPIX_PROGRESS_SANITIZERS_H

#if defined(__SANITIZE_THREAD__)
#define MPIX_UNDER_TSAN 1
#elif defined(__has_feature)
#if __has_feature(thread_sanitizer)
#define MPIX_UNDER_TSAN 1
#endif
#endif

#if defined(__SANITIZE_ADDRESS__)
#define MPIX_UNDER_ASAN 1
#elif defined(__has_feature)
#if __has_feature(address_sanitizer)
#define MPIX_UNDER_ASAN 1
#endif
#endif

#endif
