// A `Communicator&` kept from Runtime::world() and used after the Runtime is
// destroyed: every call throws tide::UsageError naming the call (before, it
// read freed memory). Run alone and under mpirun.
#include <cstdio>
#include <functional>
#include <string>
#include <utility>
#include <vector>

#include <tide/tide.h>

int main(int argc, char** argv) {
  auto rt = tide::Runtime::init(argc, argv);
  tide::Communicator& world = rt->world();
  const int rank = world.rank();
  rt.reset();

  tide::Tensor t;  // no engine is left to make a tensor with; the check comes first
  const std::vector<std::pair<const char*, std::function<void()>>> calls = {
      {"rank", [&] { (void)world.rank(); }},
      {"size", [&] { (void)world.size(); }},
      {"broken", [&] { (void)world.broken(); }},
      {"all_reduce_", [&] { world.all_reduce_(t); }},
      {"all_reduce", [&] { (void)world.all_reduce(t); }},
      {"broadcast_", [&] { world.broadcast_(t); }},
      {"all_gather", [&] { (void)world.all_gather(t); }},
      {"reduce_scatter", [&] { (void)world.reduce_scatter(t); }},
      {"barrier", [&] { world.barrier(); }},
      {"split", [&] { (void)world.split(0); }},
      {"check_sync", [&] { world.check_sync(); }},
  };
  int bad = 0;
  for (const auto& [name, call] : calls) {
    const std::string want = std::string("Communicator::") + name + ": this communicator belonged to a Runtime";
    try {
      call();
      std::printf("rank %d: %s did not throw\n", rank, name);
      ++bad;
    } catch (const tide::UsageError& e) {
      if (std::string(e.what()).rfind(want, 0) != 0) {
        std::printf("rank %d: %s threw \"%s\"\n", rank, name, e.what());
        ++bad;
      }
    } catch (const std::exception& e) {
      std::printf("rank %d: %s threw something else: %s\n", rank, name, e.what());
      ++bad;
    }
  }
  if (bad == 0) std::printf("rank %d: OK: %zu calls on a retired world refused\n", rank, calls.size());
  return bad == 0 ? 0 : 1;
}
