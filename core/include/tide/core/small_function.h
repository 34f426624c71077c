// SmallFunction: a move-only callable with inline storage, so pushing an op
// does not heap-allocate for its closure (std::function keeps only 16 bytes
// inline and needs copyable captures).
#pragma once

#include <cstddef>
#include <new>
#include <type_traits>
#include <utility>

namespace tide {

template <typename Sig, std::size_t Capacity = 96>
class SmallFunction;

template <typename R, typename... Args, std::size_t Capacity>
class SmallFunction<R(Args...), Capacity> {
 public:
  SmallFunction() = default;

  template <typename F, typename = std::enable_if_t<!std::is_same_v<std::decay_t<F>, SmallFunction>>>
  SmallFunction(F&& f) {  // NOLINT: implicit by design, like std::function
    using Fn = std::decay_t<F>;
    static_assert(sizeof(Fn) <= Capacity, "closure too large for SmallFunction: capture less");
    static_assert(alignof(Fn) <= alignof(std::max_align_t));
    new (buf_) Fn(std::forward<F>(f));
    call_ = [](void* p, Args... a) -> R { return (*static_cast<Fn*>(p))(std::forward<Args>(a)...); };
    manage_ = [](void* dst, void* src) {
      if (dst) new (dst) Fn(std::move(*static_cast<Fn*>(src)));
      static_cast<Fn*>(src)->~Fn();
    };
  }

  SmallFunction(SmallFunction&& o) noexcept { take(o); }
  SmallFunction& operator=(SmallFunction&& o) noexcept {
    if (this != &o) {
      reset();
      take(o);
    }
    return *this;
  }
  SmallFunction(const SmallFunction&) = delete;
  SmallFunction& operator=(const SmallFunction&) = delete;
  ~SmallFunction() { reset(); }

  explicit operator bool() const { return call_ != nullptr; }
  R operator()(Args... a) { return call_(buf_, std::forward<Args>(a)...); }

  void reset() {
    if (manage_) manage_(nullptr, buf_);
    call_ = nullptr;
    manage_ = nullptr;
  }

 private:
  void take(SmallFunction& o) {
    if (o.manage_) o.manage_(buf_, o.buf_);
    call_ = o.call_;
    manage_ = o.manage_;
    o.call_ = nullptr;
    o.manage_ = nullptr;
  }

  alignas(std::max_align_t) unsigned char buf_[Capacity];
  R (*call_)(void*, Args...) = nullptr;
  void (*manage_)(void* dst, void* src) = nullptr;
};

}  // namespace tide
