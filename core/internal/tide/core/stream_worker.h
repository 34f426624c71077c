// Whether the calling thread is a stream's worker (an internal header for
// ops: not installed). A worker launches only on its own stream and ends
// before that stream is destroyed, so state it keeps per native stream
// (a kernel's reusable scratch) lives no longer than the stream; the
// frontend, which also launches ops on idle GPU streams, outlives them.
#pragma once

namespace tide {

bool on_stream_worker() noexcept;

}  // namespace tide
