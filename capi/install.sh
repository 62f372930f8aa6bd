#!/bin/sh
# Installs accelhost's OPAE-compatible C API into a prefix; `--help` says how.
set -eu

usage() {
	cat <<'USAGE'
usage: capi/install.sh [--release | --lib-dir DIR] [--link] PREFIX

Installs accelhost's OPAE-compatible C API into PREFIX:
  PREFIX/include/opae/*.h
  PREFIX/lib/libopae_c.so, and libopae-c.so -> libopae_c.so (OPAE's library name)
  PREFIX/lib/pkgconfig/opae.pc and accelhost-opae.pc (the same file)
Then `pkg-config --cflags --libs opae` (with PKG_CONFIG_PATH=PREFIX/lib/pkgconfig) gives
a C program everything it needs.

options:
  (none)         builds the dev profile (cargo build -p accelhost-opae) and installs it
  --release      builds and installs the release profile
  --lib-dir DIR  installs DIR/libopae_c.so as it is (no build)
  --link         symlinks the library instead of copying it (a debug build is large)
  -h, --help     prints this and exits
USAGE
}

fail() {
	echo "install.sh: $1" >&2
	echo "usage: capi/install.sh [--release | --lib-dir DIR] [--link] PREFIX (--help for more)" >&2
	exit 2
}

here=$(cd "$(dirname "$0")" && pwd)
root=$(dirname "$here")
profile=dev
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
	--) shift; [ $# -eq 1 ] || fail "one PREFIX after --"; prefix_arg=$1; shift ;;
	-*) fail "unknown option '$1'" ;;
	*)
		[ -z "$prefix_arg" ] || fail "one PREFIX, not '$prefix_arg' and '$1'"
		prefix_arg=$1
		shift
		;;
	esac
done
[ -n "$prefix_arg" ] || fail "no PREFIX given"
if [ -e "$prefix_arg" ] && [ ! -d "$prefix_arg" ]; then
	fail "PREFIX '$prefix_arg' exists and is not a directory"
fi
if [ -z "$lib_dir" ]; then
	cargo=${CARGO:-cargo}
	if [ "$profile" = release ]; then
		(cd "$root" && "$cargo" build --release -p accelhost-opae)
		sub=release
	else
		(cd "$root" && "$cargo" build -p accelhost-opae)
		sub=debug
	fi
	lib_dir=${CARGO_TARGET_DIR:-$root/target}/$sub
fi
[ -f "$lib_dir/libopae_c.so" ] || { echo "install.sh: $lib_dir/libopae_c.so not found" >&2; exit 1; }
mkdir -p -- "$prefix_arg" || fail "cannot create PREFIX '$prefix_arg'"
[ -w "$prefix_arg" ] || fail "PREFIX '$prefix_arg' is not writable"
prefix=$(cd -- "$prefix_arg" && pwd)

version=$(sed -n 's/^version = "\(.*\)"/\1/p' "$root/Cargo.toml" | head -n 1)
mkdir -p "$prefix/include/opae" "$prefix/lib/pkgconfig"
cp "$here"/include/opae/*.h "$prefix/include/opae/"
rm -f "$prefix/lib/libopae_c.so"
if [ -n "$link" ]; then
	ln -s "$(cd "$lib_dir" && pwd)/libopae_c.so" "$prefix/lib/libopae_c.so"
else
	cp "$lib_dir/libopae_c.so" "$prefix/lib/libopae_c.so"
fi
ln -sf libopae_c.so "$prefix/lib/libopae-c.so"
sed -e "s|@PREFIX@|$prefix|" -e "s|@VERSION@|$version|" "$here/opae.pc.in" \
	>"$prefix/lib/pkgconfig/opae.pc"
cp "$prefix/lib/pkgconfig/opae.pc" "$prefix/lib/pkgconfig/accelhost-opae.pc"
echo "installed the OPAE C API of accelhost $version into $prefix"
