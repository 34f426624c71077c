#include "device_clock.h"

#include <algorithm>
#include <cmath>

namespace tide {

double ClockMap::map(const Point& p, double device_ns) const {
  const double x = device_ns - p.device_ns;
  if (x <= 0) return p.host_ns + p.rate * x;  // before the oldest anchor kept
  return p.host_ns + p.rate * x + p.bend * std::min(x, kSettleNs);
}

std::uint64_t ClockMap::add(double since_previous_ns, std::int64_t before_ns, std::int64_t after_ns) {
  const bool usable = after_ns >= before_ns && after_ns - before_ns <= kMaxWindowNs;
  if (points_.empty()) base_ = before_ns;
  const double reading = 0.5 * (static_cast<double>(before_ns - base_) + static_cast<double>(after_ns - base_));
  Point p{0, reading, 1.0, 0.0};
  if (!points_.empty()) {
    const Point& last = points_.back();
    p.device_ns = last.device_ns + std::max(0.0, since_previous_ns);
    p.host_ns = map(last, p.device_ns);  // continuous: the timeline never jumps
    p.rate = last.rate;
  }
  if (usable) {
    if (!have_reference_) {
      have_reference_ = true;
      ref_device_ = p.device_ns;
      ref_host_ = reading;
    } else if (p.device_ns - ref_device_ >= kRateBaselineNs) {
      const double r = (reading - ref_host_) / (p.device_ns - ref_device_);
      if (std::abs(r - 1.0) <= kMaxRateError) p.rate = r;
    }
    residual_ = reading - p.host_ns;
    max_residual_ = std::max(max_residual_, std::abs(residual_));
    p.bend = std::clamp(residual_ / kSettleNs, -kMaxRateError, kMaxRateError);
    ++used_;
  } else {
    ++ignored_;
  }
  points_.push_back(p);
  if (points_.size() > kKeep) {
    points_.pop_front();
    ++first_;
  }
  return newest();
}

bool ClockMap::to_host(std::uint64_t k, double offset_ns, std::int64_t& host_ns) const {
  if (points_.empty() || k < first_ || k > newest()) return false;
  std::size_t j = static_cast<std::size_t>(k - first_);
  const double d = points_[j].device_ns + offset_ns;
  while (j + 1 < points_.size() && points_[j + 1].device_ns <= d) ++j;
  while (j > 0 && points_[j].device_ns > d) --j;
  host_ns = base_ + std::llround(map(points_[j], d));
  return true;
}

}  // namespace tide
