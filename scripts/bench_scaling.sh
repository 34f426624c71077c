#!/usr/bin/env bash
# Builds examples/bench_scaling, runs it under mpirun for 1, 2 and 4 ranks,
# merges the runs into one data file and plots them with gnuplot.
#
#   scripts/bench_scaling.sh [OUT_DIR] [-- BENCH_FLAGS...]
#   scripts/bench_scaling.sh --replot [OUT_DIR]   # only redraw the PNG from OUT_DIR's .dat
#
# OUT_DIR defaults to docs/results. It gets bench_scaling_np{R}.json (one per
# rank count), bench_scaling.dat (every configuration of every run, with the
# time per step relative to the first rank count), bench_scaling.txt (the
# printed tables and the weak-scaling table) and bench_scaling.png.
# TIDE_BUILD_DIR (default build/) and TIDE_JOBS as in scripts/build.sh;
# TIDE_BENCH_RANKS overrides the rank counts (default "1 2 4").
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
out=$root/docs/results
replot=0
if [ $# -gt 0 ] && [ "$1" = "--replot" ]; then
  replot=1
  shift
fi
if [ $# -gt 0 ] && [ "$1" != "--" ]; then
  out=$1
  shift
fi
[ $# -gt 0 ] && [ "$1" = "--" ] && shift
build=${TIDE_BUILD_DIR:-$root/build}
jobs=${TIDE_JOBS:-$(nproc)}
ranks=${TIDE_BENCH_RANKS:-1 2 4}
first=${ranks%% *}

tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT

if [ "$replot" -eq 1 ]; then
  ranks=$(awk '!/^#/ { print $1 }' "$out/bench_scaling.dat" | sort -un | tr '\n' ' ')
  ranks=${ranks% }
else
  "$root/scripts/setup.sh" --bench
  cmake -S "$root" -B "$build" -DCMAKE_BUILD_TYPE=Release >/dev/null
  cmake --build "$build" -j "$jobs" --target bench_scaling >/dev/null
  bench=$build/examples/bench_scaling

  # Open MPI refuses to start as root unless told that it is meant.
  if [ "$(id -u)" -eq 0 ]; then
    export OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1
  fi

  mkdir -p "$out"

  # --bind-to none: each rank runs a frontend and three stream workers; Open
  # MPI's default for one or two ranks would pin all of them to a single core.
  # A run whose checks fail still writes its files (exit status 3): plot it
  # all, then fail at the end.
  dats=()
  failed=""
  for r in $ranks; do
    echo "== $r rank(s)"
    status=0
    mpirun --oversubscribe --bind-to none -np "$r" "$bench" --json "$out/bench_scaling_np$r.json" \
      --dat "$tmp/np$r.dat" "$@" | tee "$tmp/np$r.txt" || status=$?
    [ -s "$tmp/np$r.dat" ] || { echo "bench_scaling.sh: the $r-rank run failed (status $status)" >&2; exit 1; }
    [ "$status" -eq 0 ] || failed="$failed $r"
    dats+=("$tmp/np$r.dat")
  done

  # One table: every run's rows, plus each row's time per step relative to the
  # same size and lookahead at the first rank count (weak scaling: every rank
  # does the same work, so 1.0 is perfect).
  awk -v base_r="$first" '
    NR == 1 { print $0, "rel_ms_per_step" }
    /^#/ { next }
    { key = $2 " " $5
      if ($1 == base_r) base[key] = $8
      print $0, (key in base) ? sprintf("%.4g", $8 / base[key]) : "nan" }
  ' "${dats[@]}" >"$out/bench_scaling.dat"

  weak_table() {
    awk -v ranks="$ranks" '
      /^#/ { next }
      { key = $2 " " $5
        if (!(key in seen)) { seen[key] = 1; order[++n] = key }
        ms[key, $1] = $8 }
      END {
        nr = split(ranks, r, " ")
        printf "weak scaling: ms per step (same work per rank), and relative to %s rank(s)\n", r[1]
        printf "%-7s %-9s", "size", "lookahead"
        for (i = 1; i <= nr; ++i) printf " %9s", "np" r[i] " ms"
        for (i = 2; i <= nr; ++i) printf " %9s", "np" r[i] "/np" r[1]
        printf "\n"
        for (j = 1; j <= n; ++j) {
          split(order[j], k, " ")
          printf "%-7s %-9s", k[1], k[2]
          for (i = 1; i <= nr; ++i) printf " %9.3f", ms[order[j], r[i]]
          for (i = 2; i <= nr; ++i) printf " %8.2fx", ms[order[j], r[i]] / ms[order[j], r[1]]
          printf "\n"
        }
      }' "$out/bench_scaling.dat"
  }

  {
    echo "# scripts/bench_scaling.sh: mpirun --oversubscribe --bind-to none -np R ${bench#"$root"/} $*"
    echo "# $(date -u +%Y-%m-%dT%H:%M:%SZ) on $(hostname), $(nproc) hardware threads"
    for r in $ranks; do
      echo
      echo "## $r rank(s)"
      grep -v '^wrote ' "$tmp/np$r.txt"
    done
    echo
    weak_table
  } >"$out/bench_scaling.txt"
  echo
  weak_table
fi
first=${ranks%% *}

# The weak-scaling view for gnuplot: one row per rank count, one column per
# (size, lookahead) in the order of the table, time per step relative to the
# first rank count.
awk '
  /^#/ { next }
  { key = $2 " " $5
    if (!(key in seen)) { seen[key] = 1; order[++n] = key }
    if (!($1 in rseen)) { rseen[$1] = 1; rk[++nr] = $1 }
    rel[key, $1] = $NF }
  END {
    printf "# ranks"
    for (j = 1; j <= n; ++j) { k = order[j]; gsub(" ", ":", k); printf " %s", k }
    printf "\n"
    for (i = 1; i <= nr; ++i) {
      printf "%s", rk[i]
      for (j = 1; j <= n; ++j) printf " %s", rel[order[j], rk[i]]
      printf "\n"
    }
  }' "$out/bench_scaling.dat" >"$tmp/weak.dat"

last=${ranks##* }
cat >"$tmp/plot.gp" <<'GP'
set terminal pngcairo size 1500,950 font ",10" noenhanced
set output png
set datafile missing "nan"
set multiplot layout 2,3 title "tide bench_scaling: a data-parallel step (7 elementwise ops + all-reduce + loss) under lookahead k"
set xtics ("sync" 0, "k=1" 1, "k=2" 2, "k=4" 3, "unbounded" 4)
set xrange [-0.3:4.3]
set grid
set key top left
sizes = "tiny medium large"
colors = "#9400d3 #009e73 #e69f00"
color(s) = word(colors, s eq "tiny" ? 1 : s eq "medium" ? 2 : 3)
$limit << EOD
1 2
2 3
3 5
EOD
bytes(s) = s eq "tiny" ? "256 B" : s eq "medium" ? "64 KiB" : "4 MiB"
do for [s in sizes] {
  set title sprintf("%s ops (%s): steps/s vs lookahead", s, bytes(s))
  set ylabel "steps/s"
  set yrange [0:*]
  set offsets 0, 0, graph 0.25, 0  # headroom for the key
  plot for [r in ranks] dat using (strcol(2) eq s && column(1) == r + 0 ? column(4) : 1/0):7 \
       with linespoints lw 2 pt 7 title sprintf("%s rank(s)", r)
}
set offsets 0, 0, 0, 0
set title "peak queued bytes, in steps of memory (largest rank)"
set ylabel "peak queued bytes / one step's bytes"
set logscale y
set yrange [0.5:*]
plot for [s in sizes] dat using (strcol(2) eq s && column(1) == last + 0 && column(4) > 0 ? column(4) : 1/0):12 \
       with linespoints lw 2 pt 7 lc rgb color(s) title sprintf("%s, %s ranks", s, last), \
     $limit using 1:2 with points pt 6 ps 2 lc "black" title "limit k+1"
unset logscale y
set title sprintf("weak scaling: time per step relative to %s rank(s)", first)
set ylabel "time per step / time at " . first . " rank(s)"
set xlabel "ranks (same work per rank; 2 cores, so 4 ranks are oversubscribed)"
set xtics autofreq
set xrange [*:*]
set logscale x 2
set yrange [0:*]
col(s, m) = 2 + 5 * (s eq "tiny" ? 0 : s eq "medium" ? 1 : 2) + m
plot for [s in sizes] weak using 1:col(s, 2) with linespoints lw 2 pt 7 lc rgb color(s) title s . ", k=2", \
     for [s in sizes] weak using 1:col(s, 0) with linespoints lw 1 dt 2 pt 6 lc rgb color(s) title s . ", sync", \
     1 with lines lc "gray" notitle
unset logscale x
unset xlabel
set xtics ("sync" 0, "k=1" 1, "k=2" 2, "k=4" 3, "unbounded" 4)
set xrange [-0.3:4.3]
set title "backend idle: compute stream not running an op"
set ylabel "fraction of wall time"
set yrange [0:1.05]
set key at graph 0.97, graph 0.34 right
plot for [s in sizes] dat using (strcol(2) eq s && column(1) == first + 0 ? column(4) : 1/0):11 \
       with linespoints lw 2 pt 7 lc rgb color(s) title sprintf("%s, %s rank(s)", s, first), \
     for [s in sizes] dat using (strcol(2) eq s && column(1) == last + 0 ? column(4) : 1/0):11 \
       with linespoints lw 1 dt 2 pt 6 lc rgb color(s) title sprintf("%s, %s ranks", s, last)
unset multiplot
GP
gnuplot -e "dat='$out/bench_scaling.dat'; weak='$tmp/weak.dat'; png='$out/bench_scaling.png'; ranks='$ranks'; first='$first'; last='$last'" \
  "$tmp/plot.gp"
if [ "$replot" -eq 1 ]; then
  echo "wrote $out/bench_scaling.png"
else
  echo "wrote $out/bench_scaling_np{${ranks// /,}}.json, $out/bench_scaling.{dat,txt,png}"
  if [ -n "$failed" ]; then
    echo "bench_scaling.sh: checks FAILED with rank count(s)$failed (see $out/bench_scaling.txt)" >&2
    exit 3
  fi
fi
