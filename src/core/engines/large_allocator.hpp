// The allocator of the engines' growing buffers (entity pools, rings, event
// heaps). A run stuck for minutes queues a million attempts, tens of MB
// touched for the first time; in 4 KiB pages the page faults took more time
// than the events (docs/agent-engine.md, "Performance"). Buffers of 8 MiB
// and more are mapped from the kernel aligned to 2 MiB and offered as huge
// pages (madvise, transparent huge pages in "madvise" mode): a fault per
// 2 MiB, and the memory goes back to the kernel when the run ends. Smaller
// ones come from operator new as before. Results never depend on it.
#pragma once

#include <cstddef>
#include <cstdint>
#include <cstdlib>
#include <new>

#if defined(__linux__)
#include <sys/mman.h>
#endif

namespace retrystorm {

// Maps `bytes` (a multiple of the huge page size) aligned to it, straight
// from the kernel: given back whole when freed, never kept by malloc.
inline void* map_large(size_t bytes, size_t align) {
#if defined(__linux__)
  size_t span = bytes + align;
  void* raw = mmap(nullptr, span, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
  if (raw == MAP_FAILED) throw std::bad_alloc();
  auto start = reinterpret_cast<uintptr_t>(raw);
  uintptr_t aligned = (start + align - 1) / align * align;
  if (aligned > start) munmap(raw, aligned - start);  // the unaligned head and tail
  if (size_t tail = start + span - (aligned + bytes); tail > 0)
    munmap(reinterpret_cast<void*>(aligned + bytes), tail);
  void* p = reinterpret_cast<void*>(aligned);
#if defined(MADV_HUGEPAGE)
  madvise(p, bytes, MADV_HUGEPAGE);  // advice only: without it, small pages
#endif
  return p;
#else
  void* p = std::aligned_alloc(align, bytes);
  if (!p) throw std::bad_alloc();
  return p;
#endif
}

inline void unmap_large(void* p, size_t bytes) {
#if defined(__linux__)
  munmap(p, bytes);
#else
  (void)bytes;
  std::free(p);
#endif
}

template <typename T>
struct LargeAllocator {
  using value_type = T;
  static constexpr size_t kHugePage = size_t{2} << 20;
  // Below this, operator new: glibc's own mmap threshold then follows the
  // buffers it sees, and a server's threads kept growing their arenas when
  // buffers of 2 to 8 MiB bypassed it (HostileServer.MemoryDoesNotRatchet...).
  static constexpr size_t kMapped = size_t{8} << 20;

  LargeAllocator() = default;
  template <typename U>
  LargeAllocator(const LargeAllocator<U>&) {}  // NOLINT: converting, as std::allocator

  T* allocate(size_t n) {
    size_t bytes = n * sizeof(T);
    if (bytes < kMapped) return static_cast<T*>(::operator new(bytes));
    return static_cast<T*>(map_large(rounded(bytes), kHugePage));
  }
  void deallocate(T* p, size_t n) {
    size_t bytes = n * sizeof(T);
    if (bytes < kMapped)
      ::operator delete(p);
    else
      unmap_large(p, rounded(bytes));
  }
  template <typename U>
  bool operator==(const LargeAllocator<U>&) const {
    return true;
  }

 private:
  static size_t rounded(size_t bytes) { return (bytes + kHugePage - 1) / kHugePage * kHugePage; }
};

}  // namespace retrystorm
