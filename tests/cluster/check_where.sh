# check_where: reads the lines "rank R local L/S host H netns N world W" of
# tide_cluster_where (where_main.cc) from stdin, any order, other lines
# ignored; exits 0 when 4 ranks ran as 2 nodes x 2: ranks 0,1 on node1 and
# 2,3 on node2, each node's local ranks 0,1 of 2, one network namespace per
# node. Otherwise prints what is wrong and exits 1. Sourced by
# run_cluster_test.sh (mpirun) and run_slurm_test.sh (srun).
check_where() {
  grep '^rank ' | sort -k2,2n | awk '
    { split($4, ls, "/"); rank[NR - 1] = $2; local[NR - 1] = ls[1]; size[NR - 1] = ls[2]
      host[NR - 1] = $6; ns[NR - 1] = $8; world[NR - 1] = $10 }
    END {
      bad = 0
      if (NR != 4) { print "expected 4 ranks, got " NR; exit 1 }
      for (r = 0; r < 4; ++r) {
        want_host = r < 2 ? "node1" : "node2"
        if (rank[r] != r) { print "no line for rank " r; bad = 1 }
        if (host[r] != want_host) { print "rank " r " runs on " host[r] ", expected " want_host; bad = 1 }
        if (local[r] != r % 2 || size[r] != 2) { print "rank " r ": local " local[r] "/" size[r] ", expected " r % 2 "/2"; bad = 1 }
        if (world[r] != 4) { print "rank " r " counted a world of " world[r]; bad = 1 }
      }
      if (ns[0] != ns[1] || ns[2] != ns[3] || ns[0] == ns[2]) { print "network namespaces do not match the nodes"; bad = 1 }
      exit bad
    }'
}
