// Element types of tensors.
#pragma once

#include <cstddef>
#include <cstdint>
#include <type_traits>

namespace tide {

enum class DType : std::uint8_t { f32 = 0, f64 = 1, i32 = 2, i64 = 3 };

constexpr std::size_t dtype_size(DType t) {
  return t == DType::f64 || t == DType::i64 ? 8 : 4;
}
constexpr bool is_floating(DType t) { return t == DType::f32 || t == DType::f64; }
const char* dtype_name(DType t);

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
template <typename T>
inline constexpr DType dtype_v = dtype_of<T>::value;

/// Calls f(T{}) with T the C++ type of `t`: one switch for every kernel.
/// Creation ops dispatch on the dtype a user asked for before the tensor
/// is made, which refuses a bad one (tensor_bytes): any other value takes
/// the i32 path until then.
template <typename F>
decltype(auto) dispatch_dtype(DType t, F&& f) {
  switch (t) {
    case DType::f32: return f(float{});
    case DType::f64: return f(double{});
    case DType::i64: return f(std::int64_t{});
    case DType::i32: break;
  }
  return f(std::int32_t{});
}

}  // namespace tide
