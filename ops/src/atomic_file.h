// Whole files written so that a crash leaves the old file or the new one,
// never a part of either.
#pragma once

#include <string>
#include <string_view>

namespace tide::detail {

/// Writes `bytes` to PATH.tmp.TID (the writing thread's id), fsyncs it, renames it over `path` and
/// fsyncs the directory (the rename is durable only then). Throws
/// tide::FileError naming the file, the step and the errno text; the
/// temporary file is removed on failure. `who` starts the message
/// ("tide::save").
void write_file_atomically(const std::string& path, std::string_view bytes, const char* who);

/// The temporary file write_file_atomically uses for `path` in this process.
std::string temporary_path(const std::string& path);

}  // namespace tide::detail
