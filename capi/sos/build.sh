#!/bin/sh
# build.sh: builds Sandia OpenSHMEM (SOS) over libportals.so.4 and a few of its
# unit tests, for capi's TestSOSHydra (GOPORTALS_SOS_DIR=OUT go test ./capi).
#
#	capi/sos/build.sh OUT [SOS_SRC [TESTS_SOS_SRC]]
#
# OUT/portals4  libportals.so.4 installed by `make -C capi PREFIX=OUT/portals4 install`
# OUT/sos       SOS, configured --with-portals4=OUT/portals4 --enable-pmi-simple
# OUT/tests     the unit tests TestSOSHydra runs, compiled with OUT/sos/bin/oshcc
#
# SOS_SRC and TESTS_SOS_SRC are checkouts of github.com/Sandia-OpenSHMEM/SOS and
# github.com/openshmem-org/tests-sos (SOS's modules/tests-sos submodule); without
# them the script clones both with git. Needs gcc, make, autoconf, automake and
# libtool (Debian: apt-get install autoconf automake libtool); running the tests
# needs mpiexec.hydra (Debian: mpich). Takes a few minutes.
set -eu

if [ $# -lt 1 ]; then
	echo "usage: $0 OUT [SOS_SRC [TESTS_SOS_SRC]]" >&2
	exit 2
fi
here=$(cd "$(dirname "$0")/.." && pwd)
mkdir -p "$1"
out=$(cd "$1" && pwd)
src=$out/src
rm -rf "$src"
if [ $# -ge 2 ]; then
	cp -a "$2" "$src"
else
	git clone --depth 1 https://github.com/Sandia-OpenSHMEM/SOS "$src"
fi
if [ ! -f "$src/modules/tests-sos/configure.ac" ]; then
	rm -rf "$src/modules/tests-sos"
	if [ $# -ge 3 ]; then
		cp -a "$3" "$src/modules/tests-sos"
	else
		git clone --depth 1 https://github.com/openshmem-org/tests-sos "$src/modules/tests-sos"
	fi
fi

make -C "$here" PREFIX="$out/portals4" BUILD="$out/capi-build" install

cd "$src"
./autogen.sh
# --enable-pmi-simple: SOS brings its own PMI-1 client, which hydra's mpiexec
# serves; libportals.so.4 then leaves the PMI connection to it and SOS gives its
# logical NI the map (PtlSetMap).
./configure --prefix="$out/sos" --with-portals4="$out/portals4" --enable-pmi-simple \
	--disable-fortran --disable-cxx
make -j"$(nproc)"
make install

unit=$src/modules/tests-sos/test/unit
mkdir -p "$out/tests"
for t in hello barrier repeated_barriers put1 put_nbi get1 bigput atomic_inc to_all big_reduction fadd_nbi cswap lfinc \
	ping pingpong collect max_reduction reduce_in_place shmem_ptr; do
	"$out/sos/bin/oshcc" -O2 -I"$unit" -I"$src/modules/tests-sos/test/include" -o "$out/tests/$t" "$unit/$t.c"
done
echo "built: GOPORTALS_SOS_DIR=$out go test -run TestSOSHydra ./capi"
