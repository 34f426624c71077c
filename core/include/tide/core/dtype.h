// Element types of tensors.
#pragma once

#include <cstddef>
#include <cstdint>
#include <type_traits>
#include <utility>

namespace tide {

/// b8 is bool: one byte holding 0 or 1 (comparisons make it; masks,
/// where's condition and conversions take it; arithmetic does not).
enum class DType : std::uint8_t { f32 = 0, f64 = 1, i32 = 2, i64 = 3, b8 = 4 };

constexpr std::size_t dtype_size(DType t) {
  return t == DType::f64 || t == DType::i64 ? 8 : t == DType::b8 ? 1 : 4;
}
constexpr bool is_floating(DType t) { return t == DType::f32 || t == DType::f64; }
/// "f32", "f64", "i32", "i64" or "bool".
const char* dtype_name(DType t);

/// What dispatch_dtype throws for a bool tensor (an op that takes numbers).
[[noreturn]] void throw_no_bool();

template <typename T>
struct dtype_of;
template <>
struct dtype_of<float> { static constexpr DType value = DType::f32; };
template <>
struct dtype_of<double> { static constexpr DType value = DType::f64; };
template <>
struct dtype_of<std::int32_t> { static constexpr DType value = DType::i32; };
template <>
struct dtype_of<std::int64_t> { static constexpr DType value = DType::i64; };
template <>
struct dtype_of<bool> { static constexpr DType value = DType::b8; };
template <typename T>
inline constexpr DType dtype_v = dtype_of<T>::value;

/// Calls f(T{}) with T the C++ type of numeric dtype `t`: one switch for
/// every kernel. A bool tensor is refused (DTypeError): the kernels that
/// take bool dispatch with dispatch_dtype_or_bool. Creation ops dispatch on
/// the dtype a user asked for before the tensor is made, which refuses a
/// bad one (tensor_bytes): any other value takes the i32 path until then.
template <typename F>
decltype(auto) dispatch_dtype(DType t, F&& f) {
  switch (t) {
    case DType::f32: return f(float{});
    case DType::f64: return f(double{});
    case DType::i64: return f(std::int64_t{});
    case DType::b8: throw_no_bool();
    case DType::i32: break;
  }
  return f(std::int32_t{});
}

/// dispatch_dtype, and f(bool{}) for a bool tensor: for the kernels that
/// move, select, compare or convert values (copies, gathers, where's
/// condition, conversions, printing).
template <typename F>
decltype(auto) dispatch_dtype_or_bool(DType t, F&& f) {
  if (t == DType::b8) return f(bool{});
  return dispatch_dtype(t, std::forward<F>(f));
}

}  // namespace tide
