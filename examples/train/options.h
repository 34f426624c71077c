// Command-line values of the trainer that need more than a range check.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

namespace tide::train {

/// "512,256" -> {512, 256}. Throws std::invalid_argument naming the text and
/// what is wrong: an empty width ("64,,32", a comma at either end), one that
/// is not a whole number, or one below 1.
std::vector<std::int64_t> parse_widths(const std::string& text);

}  // namespace tide::train
