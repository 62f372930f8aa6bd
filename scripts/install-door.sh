#!/bin/sh
# Installs one of accelhost's ecosystem doors (OPAE's C API, XRT's native API, LLVM's Offload
# API, libcxl) into a prefix: its library, headers and pkg-config file. Run through
# capi/install.sh, xrt/install.sh, offload/install.sh or libcxl/install.sh; `--help` says how.
set -eu

door=${1:?the door: opae, xrt, offload or libcxl}
shift
root=$(cd "$(dirname "$0")/.." && pwd)
# Each door: its folder, package, library, header folders, pkg-config file (from <pc>.pc.in
# in its folder), and what else OPAE's programs look for (another name of the library, a
# second name of the pkg-config file).
dir=$door
aliases=
extra_pc=
also=
case "$door" in
opae)
	dir=capi
	package=accelhost-opae
	library=libopae_c.so
	headers="include/opae"
	pc=opae
	aliases=libopae-c.so
	extra_pc=accelhost-opae
	what="the OPAE C API"
	contents="  PREFIX/include/opae/*.h"
	also="
  PREFIX/lib/libopae-c.so -> libopae_c.so (OPAE's library name)
  PREFIX/lib/pkgconfig/accelhost-opae.pc (the same file as opae.pc)"
	;;
xrt)
	package=accelhost-xrt
	library=libxrt_coreutil.so
	headers="include/xrt include/experimental"
	pc=xrt
	what="XRT's native API"
	contents="  PREFIX/include/xrt/*.h, PREFIX/include/experimental/*.h (XRT's header layout)"
	;;
offload)
	package=accelhost-offload
	library=libLLVMOffload.so
	headers="include/offload"
	pc=offload
	what="LLVM's Offload API"
	contents="  PREFIX/include/offload/OffloadAPI.h"
	;;
libcxl)
	package=accelhost-libcxl
	library=libcxl.so
	headers="include/libcxl.h"
	pc=libcxl
	aliases=libcxl.so.1
	what="libcxl's API"
	contents="  PREFIX/include/libcxl.h"
	also="
  PREFIX/lib/libcxl.so.1 -> libcxl.so (the library's soname)"
	;;
*)
	echo "install-door.sh: no door '$door' (opae, xrt, offload or libcxl)" >&2
	exit 2
	;;
esac
here="$root/$dir"

usage() {
	cat <<USAGE
usage: $dir/install.sh [--release | --lib-dir DIR] [--link] PREFIX

Installs $what over accelhost into PREFIX:
$contents
  PREFIX/lib/$library
  PREFIX/lib/pkgconfig/$pc.pc$also
Then \`pkg-config --cflags --libs $pc\` (with PKG_CONFIG_PATH=PREFIX/lib/pkgconfig) gives
a program everything it needs.

options:
  (none)         builds the dev profile (cargo build -p $package) and installs it
  --release      builds and installs the release profile
  --lib-dir DIR  installs DIR/$library as it is (no build)
  --link         symlinks the library instead of copying it (a debug build is large)
  -h, --help     prints this and exits
USAGE
}

fail() {
	echo "install.sh: $1" >&2
	echo "usage: $dir/install.sh [--release | --lib-dir DIR] [--link] PREFIX (--help for more)" >&2
	exit 2
}

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
	--)
		shift
		[ $# -eq 1 ] || fail "one PREFIX after --"
		prefix_arg=$1
		shift
		;;
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
	(cd "$root" && "${CARGO:-cargo}" build $release -p "$package")
	lib_dir=${CARGO_TARGET_DIR:-$root/target}/$profile
fi
[ -f "$lib_dir/$library" ] || { echo "install.sh: $lib_dir/$library not found" >&2; exit 1; }
mkdir -p -- "$prefix_arg" || fail "cannot create PREFIX '$prefix_arg'"
[ -w "$prefix_arg" ] || fail "PREFIX '$prefix_arg' is not writable"
prefix=$(cd -- "$prefix_arg" && pwd)

version=$(sed -n 's/^version = "\(.*\)"/\1/p' "$root/Cargo.toml" | head -n 1)
mkdir -p "$prefix/include" "$prefix/lib/pkgconfig"
for dir in $headers; do
	cp -R "$here/$dir" "$prefix/include/"
done
rm -f "$prefix/lib/$library"
if [ -n "$link" ]; then
	ln -s "$(cd "$lib_dir" && pwd)/$library" "$prefix/lib/$library"
else
	cp "$lib_dir/$library" "$prefix/lib/$library"
fi
for alias in $aliases; do
	ln -sf "$library" "$prefix/lib/$alias"
done
sed -e "s|@PREFIX@|$prefix|" -e "s|@VERSION@|$version|" "$here/$pc.pc.in" >"$prefix/lib/pkgconfig/$pc.pc"
for name in $extra_pc; do
	cp "$prefix/lib/pkgconfig/$pc.pc" "$prefix/lib/pkgconfig/$name.pc"
done
echo "installed $what over accelhost $version into $prefix"
