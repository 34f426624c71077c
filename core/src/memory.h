// What tide's storages hold on each device, and the error an allocation
// that fails throws (internal to core/).
#pragma once

#include <cstdint>
#include <optional>
#include <string>

#include <tide/core/device.h>

namespace tide::memory {

/// "4398046511104 bytes (4 TiB)".
std::string format_bytes(std::uint64_t n);

/// The environment variable `name` as a whole number: nullopt when unset or
/// empty; a ValueError "NAME=value: expected a whole number of <what>" when
/// it is anything else (or above 2^40).
std::optional<std::uint64_t> whole_number_env(const char* name, const char* what);

/// RAM plus swap (read once): no CPU allocation larger than this can ever
/// be backed.
std::uint64_t host_memory_bytes();

/// Counts `nbytes` as held (or released) on cpu:`index`.
void note_cpu_held(int index, std::uint64_t nbytes);
void note_cpu_released(int index, std::uint64_t nbytes);
std::uint64_t cpu_held_total();

/// Throws OutOfMemoryError: "out of memory on <device>: cannot allocate
/// <requested> (<why>); tide's storages hold <in_use> on <device> now
/// (<note>)", without the parenthesis when `note` is empty.
[[noreturn]] void throw_out_of_memory(Device device, std::uint64_t requested, std::uint64_t in_use,
                                      const std::string& why, const std::string& note = "");

}  // namespace tide::memory
