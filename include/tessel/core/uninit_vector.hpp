#pragma once
/// UninitVector<T>: a std::vector whose resize(n) / vector(n) leave trivially constructible
/// elements uninitialised (default-initialised) instead of zeroing them. For buffers that are
/// written in full before they are read (message buffers, a redistribution's destination):
/// zeroing them first costs a pass over memory that a large multiply pays on every call.
/// assign(n, value) and resize(n, value) still write `value`.
#include <memory>
#include <new>
#include <utility>
#include <vector>

namespace tessel {

template <class T>
struct DefaultInitAllocator : std::allocator<T> {
  using std::allocator<T>::allocator;
  DefaultInitAllocator() noexcept = default;
  template <class U>
  DefaultInitAllocator(const DefaultInitAllocator<U>&) noexcept {}  // NOLINT: rebinding
  template <class U>
  struct rebind {
    using other = DefaultInitAllocator<U>;
  };
  /// No arguments: default-initialise (for double: no write at all).
  template <class U>
  void construct(U* p) noexcept(noexcept(::new (static_cast<void*>(p)) U)) {
    ::new (static_cast<void*>(p)) U;
  }
  template <class U, class... Args>
  void construct(U* p, Args&&... args) {
    ::new (static_cast<void*>(p)) U(std::forward<Args>(args)...);
  }
};

template <class T, class U>
bool operator==(const DefaultInitAllocator<T>&, const DefaultInitAllocator<U>&) noexcept {
  return true;
}
template <class T, class U>
bool operator!=(const DefaultInitAllocator<T>&, const DefaultInitAllocator<U>&) noexcept {
  return false;
}

template <class T>
using UninitVector = std::vector<T, DefaultInitAllocator<T>>;

}  // namespace tessel
