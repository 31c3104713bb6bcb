#!/bin/bash
# compare-sos.sh: same-run comparison of shmembench (2 PEs under ptlrun) with
# Sandia OpenSHMEM (SOS) over libfabric's shm provider (2 PEs under MPICH's
# mpiexec.hydra). Optional: nothing in the build or the tests needs it.
#
#	shmem/cmd/shmembench/compare-sos.sh [-r ROUNDS] [-o OUT] [-t TESTS_SOS] SOS_PREFIX
#
# SOS_PREFIX  an installed SOS built over libfabric for its shm provider:
#               ./configure --prefix=SOS_PREFIX --with-ofi --enable-pmi-simple \
#                 --enable-ofi-mr=basic --enable-ofi-manual-progress --enable-hard-polling
#             (shm wants virtual addresses, manual progress and no counter bound
#             to a memory region; docs/shmem-vs-sos.md says why and how).
# -t DIR      a checkout of github.com/openshmem-org/tests-sos (SOS's
#             modules/tests-sos): needed the first time, to compile the SOS tests
#             (default: SOS_PREFIX/../src/modules/tests-sos if it exists).
# -o DIR      where binaries and raw outputs go (default ${TMPDIR:-/tmp}/compare-sos).
# -r N        interleaved rounds (default 5).
#
# Each round runs our benchmark, then SOS's tests, back to back, and prints
# the per-metric ratio of that round, oriented so that above 1 means ours is
# better (SOS time / our time for latencies, our rate / SOS rate for rates);
# the last lines are each column's median over the rounds, and our windowed
# 1 MiB rate by PE 0's CPU time (shmembench -cpu) per round: on a host whose
# cores other work shares, how much of the wall-clock rate is the copy's cost
# and how much the wait for a core.
#
# The metrics, side by side (SOS test and what its row means; our line):
#   put8   shmem_latency_put_perf -s 8 -e 8: 8-byte shmem_putmem then shmem_quiet,
#          time per iteration       | "put 8 B + quiet"
#   fadd   shmem_bw_atomics_perf, shmem_fadd ulong row, last column: back-to-back
#          blocking fetch-adds, time per call | "fetch-add 64-bit"
#   bw1m   shmem_bw_put_perf -s 1M -e 1M: windows of 64 blocking 1 MiB
#          shmem_putmem, each window ended by shmem_quiet, 100 windows after 10
#          warm-up windows      | "put 1048576 B x64 + quiet"
#   gups   the gups app of tests-sos, -m M -n N (M bytes per PE), compiled
#          without its untimed verification phase | the random access line
#          with -gups-m 2*M -gups-n N (whole table)
# Environment: GUPS_M (default 67108864) and GUPS_N (default 1000000) as the
# gups app's -m and -n; LAT_ITERS (20000) for both latency tests.
set -eu

rounds=5
out=${TMPDIR:-/tmp}/compare-sos
tests=
while getopts r:o:t: opt; do
	case $opt in
	r) rounds=$OPTARG ;;
	o) out=$OPTARG ;;
	t) tests=$OPTARG ;;
	*) sed -n '2,/^set -eu/p' "$0" | sed '$d; s/^# \{0,1\}//' >&2; exit 2 ;;
	esac
done
shift $((OPTIND - 1))
if [ $# -ne 1 ] || [ ! -x "$1/bin/oshcc" ]; then
	echo "usage: $0 [-r ROUNDS] [-o OUT] [-t TESTS_SOS] SOS_PREFIX (with bin/oshcc)" >&2
	exit 2
fi
sos=$(cd "$1" && pwd)
gups_m=${GUPS_M:-67108864}
gups_n=${GUPS_N:-1000000}
lat_iters=${LAT_ITERS:-20000}
here=$(cd "$(dirname "$0")" && pwd)
repo=$(cd "$here/../../.." && pwd)
command -v mpiexec.hydra >/dev/null || { echo "$0: needs mpiexec.hydra (Debian: mpich)" >&2; exit 2; }
mkdir -p "$out/raw"
: >"$out/bwcpu"

# Our side: the launcher and the benchmark, built from this checkout.
(cd "$repo" && go build -o "$out/ptlrun" ./cmd/ptlrun && go build -o "$out/shmembench" ./shmem/cmd/shmembench)

# SOS side: the three perf-suite tests and the gups app, compiled once.
if [ -z "$tests" ] && [ -d "$sos/../src/modules/tests-sos/test" ]; then
	tests=$sos/../src/modules/tests-sos
fi
suite=test/performance/shmem_perf_suite
for t in shmem_latency_put_perf shmem_bw_put_perf shmem_bw_atomics_perf gups; do
	[ -x "$out/$t" ] && continue
	if [ -z "$tests" ] || [ ! -d "$tests/$suite" ]; then
		echo "$0: $out/$t missing: give the tests-sos checkout with -t" >&2
		exit 2
	fi
	src=$tests/$suite/$t.c
	if [ "$t" = gups ]; then
		# Without its verification phase (untimed: the updates again, each
		# under a distributed lock, which takes many minutes on 2 cores).
		src=$out/gups-noverify.c
		sed '/\/\* Verification phase \*\//,/\/\* End verification phase \*\//d' \
			"$tests/test/apps/gups.c" >"$src"
	fi
	"$sos/bin/oshcc" -O2 -I"$tests/$suite" -I"$tests/test/include" -o "$out/$t" "$src"
done

# MPIEXEC_TIMEOUT: hydra kills the job's ranks itself (killing hydra would not).
sos_run() { MPIEXEC_TIMEOUT=600 mpiexec.hydra -n 2 -genv FI_PROVIDER shm -genv SHMEM_OFI_PROVIDER shm "$@"; }

# num FILE AWK-PROGRAM: the number the program prints, or fail loudly.
num() {
	v=$(awk "$2" "$1")
	case $v in
	'' | *[!0-9.e+-]*) echo "$0: no figure in $1 (awk: $2)" >&2; exit 1 ;;
	esac
	echo "$v"
}

printf '%-5s | %-38s | %-38s | %s\n' round \
	"ours: put8 us  fadd us  bw1m GB/s  GUP/s" "SOS: put8 us  fadd us  bw1m GB/s  GUP/s" \
	"ours vs SOS (>1: ours better): put8 fadd bw1m gups"
ratios=$out/ratios
: >"$ratios"
for r in $(seq 1 "$rounds"); do
	o=$out/raw/round$r
	"$out/ptlrun" -np 2 -timeout 10m "$out/shmembench" -cpu -iters "$lat_iters" \
		-gups-m $((2 * gups_m)) -gups-n "$gups_n" >"$o-ours.txt" 2>&1
	sos_run "$out/shmem_latency_put_perf" -s 8 -e 8 -n "$lat_iters" -p $((lat_iters / 10)) >"$o-sos-lat.txt" 2>&1
	sos_run "$out/shmem_bw_atomics_perf" -n 400 -p 40 >"$o-sos-amo.txt" 2>&1
	sos_run "$out/shmem_bw_put_perf" -s 1048576 -e 1048576 >"$o-sos-bw.txt" 2>&1
	sos_run "$out/gups" -m "$gups_m" -n "$gups_n" >"$o-sos-gups.txt" 2>&1

	# (the figure before the first "us" or "GB/s"; -cpu adds the CPU time after it)
	o_put=$(num "$o-ours.txt" '/^put 8 B \+ quiet/{for (i = 1; i <= NF; i++) if ($i == "us") {print $(i-1); exit}}')
	o_fadd=$(num "$o-ours.txt" '/^fetch-add 64-bit/{for (i = 1; i <= NF; i++) if ($i == "us") {print $(i-1); exit}}')
	o_bw=$(num "$o-ours.txt" '/^put 1048576 B x64 \+ quiet/{for (i = 1; i <= NF; i++) if ($i == "GB/s") {print $(i-1); exit}}')
	# the rate PE 0's CPU time gives (the second GB/s figure of -cpu)
	o_bwcpu=$(num "$o-ours.txt" '/^put 1048576 B x64 \+ quiet/{for (i = 1; i <= NF; i++) if ($i == "GB/s" && ++k == 2) {print $(i-1); exit}}')
	o_gups=$(num "$o-ours.txt" '/^random access \(GUPS\)/{print $4}')
	s_put=$(num "$o-sos-lat.txt" '$1 == 8 && NF == 2 {v = $2} END {print v}')
	s_fadd=$(num "$o-sos-amo.txt" '/^shmem_fadd$/ {f = 1} f && $1 == "ulong" {print $NF; exit}')
	s_bw=$(num "$o-sos-bw.txt" '$1 == 1048576 && NF == 3 {print $2 / 1000}')
	s_gups=$(num "$o-sos-gups.txt" '/Updates +per second/ {print $1}')

	line=$(awk -v a="$o_put" -v b="$o_fadd" -v c="$o_bw" -v d="$o_gups" \
		-v e="$s_put" -v f="$s_fadd" -v g="$s_bw" -v h="$s_gups" \
		'BEGIN {printf "%.3f %.3f %.3f %.3f", e / a, f / b, c / g, d / h}')
	echo "$line" >>"$ratios"
	printf '%-5s | %8.3f %8.3f %9.2f %9.6f | %8.3f %8.3f %9.2f %9.6f | %s\n' "$r" \
		"$o_put" "$o_fadd" "$o_bw" "$o_gups" "$s_put" "$s_fadd" "$s_bw" "$s_gups" "$line"
	echo "$r $o_put $o_fadd $o_bw $o_gups $s_put $s_fadd $s_bw $s_gups" >>"$out/figures"
	echo "$o_bwcpu" >>"$out/bwcpu"
done

# median of column k of a file of numbers
median() { awk -v k="$2" '{print $k}' "$1" | sort -g | awk '{v[NR] = $1} END {print (NR % 2) ? v[(NR + 1) / 2] : (v[NR / 2] + v[NR / 2 + 1]) / 2}'; }
echo "median ratios (>1: ours better): put8 $(median "$ratios" 1)  fadd $(median "$ratios" 2)  bw1m $(median "$ratios" 3)  gups $(median "$ratios" 4)"
tail -n "$rounds" "$out/figures" >"$out/figures.last"
echo "median figures: ours put8 $(median "$out/figures.last" 2) us, fadd $(median "$out/figures.last" 3) us, bw1m $(median "$out/figures.last" 4) GB/s, $(median "$out/figures.last" 5) GUP/s;" \
	"SOS put8 $(median "$out/figures.last" 6) us, fadd $(median "$out/figures.last" 7) us, bw1m $(median "$out/figures.last" 8) GB/s, $(median "$out/figures.last" 9) GUP/s"
echo "ours 1 MiB divided by PE 0's issuing-thread CPU time per put (a CPU cost, not a bandwidth), per round: $(tr '\n' ' ' <"$out/bwcpu")GB/s, median $(median "$out/bwcpu" 1) GB/s"
echo "raw outputs: $out/raw"
