#!/bin/sh
# Installs accelhost's XRT native API into a prefix; `--help` says how.
set -eu

usage() {
	cat <<'USAGE'
usage: xrt/install.sh [--release | --lib-dir DIR] [--link] PREFIX

Installs XRT's native API over accelhost into PREFIX:
  PREFIX/include/xrt/*.h, PREFIX/include/experimental/*.h (XRT's header layout)
  PREFIX/lib/libxrt_coreutil.so
  PREFIX/lib/pkgconfig/xrt.pc
Then `pkg-config --cflags --libs xrt` (with PKG_CONFIG_PATH=PREFIX/lib/pkgconfig) gives a
C or C++ program everything it needs.

options:
  (none)         builds the dev profile (cargo build -p accelhost-xrt) and installs it
  --release      builds and installs the release profile
  --lib-dir DIR  installs DIR/libxrt_coreutil.so as it is (no build)
  --link         symlinks the library instead of copying it (a debug build is large)
  -h, --help     prints this and exits
USAGE
}

fail() {
	echo "install.sh: $1" >&2
	echo "usage: xrt/install.sh [--release | --lib-dir DIR] [--link] PREFIX (--help for more)" >&2
	exit 2
}

here=$(cd "$(dirname "$0")" && pwd)
root=$(dirname "$here")
profile=debug
lib_dir=
link=
prefix_arg=
while [ $# -gt 0 ]; do
	case "$1" in
	-h | --help) usage; exit 0 ;;
	--release) profile=release; shift ;;
	--lib-dir)
		[ $# -ge 2 ] && [ -n "$2" ] || fail "--lib-dir needs a directory"
		lib_dir=$2
		shift 2
		;;
	--link) link=1; shift ;;
	-*) fail "unknown option '$1'" ;;
	*)
		[ -z "$prefix_arg" ] || fail "one PREFIX, not '$prefix_arg' and '$1'"
		prefix_arg=$1
		shift
		;;
	esac
done
[ -n "$prefix_arg" ] || fail "no PREFIX given"
[ ! -e "$prefix_arg" ] || [ -d "$prefix_arg" ] || fail "PREFIX '$prefix_arg' exists and is not a directory"
if [ -z "$lib_dir" ]; then
	release=
	[ "$profile" = release ] && release=--release
	(cd "$root" && "${CARGO:-cargo}" build $release -p accelhost-xrt)
	lib_dir=${CARGO_TARGET_DIR:-$root/target}/$profile
fi
library="$lib_dir/libxrt_coreutil.so"
[ -f "$library" ] || { echo "install.sh: $library not found" >&2; exit 1; }
mkdir -p -- "$prefix_arg" || fail "cannot create PREFIX '$prefix_arg'"
[ -w "$prefix_arg" ] || fail "PREFIX '$prefix_arg' is not writable"
prefix=$(cd -- "$prefix_arg" && pwd)

version=$(sed -n 's/^version = "\(.*\)"/\1/p' "$root/Cargo.toml" | head -n 1)
mkdir -p "$prefix/include" "$prefix/lib/pkgconfig"
cp -R "$here/include/xrt" "$here/include/experimental" "$prefix/include/"
rm -f "$prefix/lib/libxrt_coreutil.so"
if [ -n "$link" ]; then
	ln -s "$(cd "$lib_dir" && pwd)/libxrt_coreutil.so" "$prefix/lib/libxrt_coreutil.so"
else
	cp "$library" "$prefix/lib/libxrt_coreutil.so"
fi
sed -e "s|@PREFIX@|$prefix|" -e "s|@VERSION@|$version|" "$here/xrt.pc.in" >"$prefix/lib/pkgconfig/xrt.pc"
echo "installed XRT's native API over accelhost $version into $prefix"
