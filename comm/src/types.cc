#include <tide/comm/types.h>

#include <cmath>
#include <cstdlib>
#include <string>

namespace tide {

const char* reduce_op_name(ReduceOp op) {
  switch (op) {
    case ReduceOp::sum: return "sum";
    case ReduceOp::avg: return "avg";
    case ReduceOp::max: return "max";
    case ReduceOp::min: return "min";
  }
  return "?";
}

CommOptions CommOptions::from_env() {
  CommOptions o;
  if (const char* v = std::getenv("TIDE_COMM_TIMEOUT"); v && *v) {
    char* end = nullptr;
    double s = std::strtod(v, &end);
    if (*end != '\0' || !(s > 0) || !std::isfinite(s))
      throw ValueError(std::string("TIDE_COMM_TIMEOUT=") + v + ": expected a positive number of seconds");
    o.timeout_s = s;
  }
  if (const char* v = std::getenv("TIDE_DESYNC_CHECK"); v && *v) {
    const std::string s = v;
    if (s != "0" && s != "1") throw ValueError("TIDE_DESYNC_CHECK=" + s + ": expected 0 or 1");
    o.desync_check = s == "1";
  }
  return o;
}

}  // namespace tide
