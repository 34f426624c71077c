// Shape: up to kMaxDims extents, stored inline (no heap allocation per op).
#pragma once

#include <array>
#include <cstdint>
#include <initializer_list>
#include <string>

namespace tide {

class Shape {
 public:
  static constexpr int kMaxDims = 6;

  Shape() = default;  // a 0-d shape: one element
  /// Throws tide::ShapeError naming the shape past kMaxDims, for a negative
  /// extent, or when its nonzero extents multiply past 2^63 - 1 (so every
  /// element count and stride of a valid shape fits in an int64).
  Shape(std::initializer_list<std::int64_t> dims);
  template <typename It>
  Shape(It first, It last) {
    for (; first != last; ++first) append(static_cast<std::int64_t>(*first));
    validate();
  }

  int ndim() const { return ndim_; }
  std::int64_t operator[](int i) const { return dims_[static_cast<std::size_t>(i)]; }
  std::int64_t numel() const;
  const std::int64_t* begin() const { return dims_.data(); }
  const std::int64_t* end() const { return dims_.data() + ndim_; }

  /// Checks as the constructors do.
  void push_back(std::int64_t d);
  /// The shape without axis `axis` (which must be valid).
  Shape without(int axis) const;
  std::string str() const;

  friend bool operator==(const Shape& a, const Shape& b) {
    if (a.ndim_ != b.ndim_) return false;
    for (int i = 0; i < a.ndim_; ++i)
      if (a.dims_[static_cast<std::size_t>(i)] != b.dims_[static_cast<std::size_t>(i)]) return false;
    return true;
  }

 private:
  void append(std::int64_t d);
  void validate() const;

  std::array<std::int64_t, kMaxDims> dims_{};
  int ndim_ = 0;
};

}  // namespace tide
