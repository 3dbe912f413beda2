// MappedArray: a growable array of trivially copyable values in its own anonymous memory mapping,
// grown and shrunk with mremap, so a large array changes capacity without copying its contents or
// touching their pages again (a std::vector copies every element into freshly faulted memory).
// For arrays of many megabytes that grow in steps, such as a shard's posting lists.
//
//   MappedArray<uint32_t> a;
//   a.reserve(1 << 20);   // maps 4 MiB
//   a.resize(10);         // new elements are zero
//   a[3] = 7;
//   a.reserve(1 << 24);   // remaps; a[3] is still 7, nothing was copied
//
// Capacity is whole pages. Allocation failures throw std::bad_alloc, as std::vector does.
// Thread safety: as std::vector (const methods concurrently; any other call exclusively).
// Linux only (mremap).
#pragma once

#include <sys/mman.h>
#include <unistd.h>

#include <algorithm>
#include <cstddef>
#include <cstring>
#include <new>
#include <type_traits>
#include <utility>

namespace neardup {

template <typename T>
class MappedArray {
  static_assert(std::is_trivially_copyable_v<T>, "MappedArray moves its contents with mremap");

 public:
  MappedArray() = default;
  ~MappedArray() { Unmap(); }
  MappedArray(const MappedArray& o) {
    reserve(o.size_);
    if (o.size_ > 0) std::memcpy(data_, o.data_, o.size_ * sizeof(T));
    size_ = o.size_;
  }
  MappedArray& operator=(const MappedArray& o) {
    if (this != &o) {
      MappedArray copy(o);
      swap(copy);
    }
    return *this;
  }
  MappedArray(MappedArray&& o) noexcept { swap(o); }
  MappedArray& operator=(MappedArray&& o) noexcept {
    if (this != &o) {
      Unmap();
      swap(o);
    }
    return *this;
  }
  void swap(MappedArray& o) noexcept {
    std::swap(data_, o.data_);
    std::swap(size_, o.size_);
    std::swap(capacity_, o.capacity_);
  }

  size_t size() const { return size_; }
  size_t capacity() const { return capacity_; }
  bool empty() const { return size_ == 0; }
  T* data() { return data_; }
  const T* data() const { return data_; }
  T& operator[](size_t i) { return data_[i]; }
  const T& operator[](size_t i) const { return data_[i]; }
  T* begin() { return data_; }
  T* end() { return data_ + size_; }
  const T* begin() const { return data_; }
  const T* end() const { return data_ + size_; }

  // Capacity for at least n elements (never shrinks).
  void reserve(size_t n) {
    if (n > capacity_) Remap(n);
  }
  // Capacity for exactly max(size(), n) elements, rounded up to whole pages (may shrink).
  void set_capacity(size_t n) {
    if (n < size_) n = size_;
    if (Bytes(n) != Bytes(capacity_)) Remap(n);
  }
  // New elements are zero.
  void resize(size_t n) {
    reserve(n);
    if (n > size_) std::memset(static_cast<void*>(data_ + size_), 0, (n - size_) * sizeof(T));
    size_ = n;
  }
  void clear() { size_ = 0; }
  // Appends n values, growing the capacity at least twofold when it runs out (amortised O(1) a value).
  void append(const T* values, size_t n) {
    if (size_ + n > capacity_) reserve(std::max(size_ + n, 2 * capacity_));
    if (n > 0) std::memcpy(static_cast<void*>(data_ + size_), values, n * sizeof(T));
    size_ += n;
  }

 private:
  static size_t PageBytes() {
    static const size_t page = static_cast<size_t>(sysconf(_SC_PAGESIZE));
    return page;
  }
  static size_t Bytes(size_t n) {
    if (n == 0) return 0;
    const size_t page = PageBytes();
    return (n * sizeof(T) + page - 1) / page * page;
  }
  void Remap(size_t n) {
    const size_t want = Bytes(n);
    if (want == 0) {
      Unmap();
      return;
    }
    void* p;
    if (data_ == nullptr) {
      p = mmap(nullptr, want, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
    } else {
#if defined(__SANITIZE_THREAD__)
      // ThreadSanitizer does not follow mremap: the range left behind would keep its access
      // history, and a later mapping there would look like a race. Moved by hand instead.
      p = mmap(nullptr, want, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
      if (p != MAP_FAILED) {
        std::memcpy(p, static_cast<const void*>(data_), std::min(Bytes(capacity_), want));
        munmap(static_cast<void*>(data_), Bytes(capacity_));
      }
#else
      p = mremap(static_cast<void*>(data_), Bytes(capacity_), want, MREMAP_MAYMOVE);
#endif
    }
    if (p == MAP_FAILED) throw std::bad_alloc();
    data_ = static_cast<T*>(p);
    capacity_ = want / sizeof(T);
  }
  void Unmap() {
    if (data_ != nullptr) munmap(static_cast<void*>(data_), Bytes(capacity_));
    data_ = nullptr;
    size_ = capacity_ = 0;
  }

  T* data_ = nullptr;
  size_t size_ = 0;
  size_t capacity_ = 0;  // elements; Bytes(capacity_) is the mapping's length
};

}  // namespace neardup
