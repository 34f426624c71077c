// Where each rank runs: one line per rank,
//
//   rank R local L/S host H netns N
//
// L and S are Runtime::local_rank() and local_size(); H is the name that
// /etc/hosts gives this rank's first non-loopback IPv4 address (the node's
// name in scripts/cluster.sh's namespaces, which share the machine's host
// name), else gethostname(); N identifies the network namespace (its inode),
// which is what makes a namespace a node. tests/cluster/run_cluster_test.sh
// checks that the ranks sharing a node number 0..S-1 there.
#include <arpa/inet.h>
#include <ifaddrs.h>
#include <net/if.h>
#include <netdb.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cstdio>
#include <string>
#include <vector>

#include <tide/tide.h>

namespace {

std::string node_name() {
  std::string name;
  ifaddrs* list = nullptr;
  if (getifaddrs(&list) == 0) {
    for (ifaddrs* a = list; a && name.empty(); a = a->ifa_next) {
      if (!a->ifa_addr || a->ifa_addr->sa_family != AF_INET || (a->ifa_flags & IFF_LOOPBACK)) continue;
      char host[NI_MAXHOST];
      if (getnameinfo(a->ifa_addr, sizeof(sockaddr_in), host, sizeof host, nullptr, 0, NI_NAMEREQD) == 0)
        name = host;
    }
    freeifaddrs(list);
  }
  if (name.empty()) {
    char host[256] = {};
    gethostname(host, sizeof host - 1);
    name = host;
  }
  return name;
}

unsigned long long netns_id() {
  struct stat st {};
  return stat("/proc/self/ns/net", &st) == 0 ? static_cast<unsigned long long>(st.st_ino) : 0ULL;
}

}  // namespace

int main(int argc, char** argv) {
  auto rt = tide::Runtime::init(argc, argv);
  // The world's size, summed over ranks by a collective, so the line is only
  // printed by a rank that really is part of the job.
  tide::Tensor one = tide::from_vector(std::vector<std::int32_t>{1});
  rt->world().all_reduce_(one);
  const int counted = one.item<std::int32_t>();
  std::printf("rank %d local %d/%d host %s netns %llu world %d\n", rt->rank(), rt->local_rank(), rt->local_size(),
              node_name().c_str(), netns_id(), counted);
  std::fflush(stdout);
  return counted == rt->size() ? 0 : 1;
}
