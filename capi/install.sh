#!/bin/sh
# Installs accelhost's OPAE-compatible C API into PREFIX:
#   PREFIX/include/opae/*.h
#   PREFIX/lib/libopae_c.so, and libopae-c.so -> libopae_c.so (OPAE's library name)
#   PREFIX/lib/pkgconfig/opae.pc and accelhost-opae.pc (the same file)
#
# usage: capi/install.sh [--release | --lib-dir DIR] [--link] PREFIX
#   default     builds the dev profile (cargo build -p accelhost-opae) and installs it
#   --release   builds and installs the release profile
#   --lib-dir   installs DIR/libopae_c.so as it is (no build)
#   --link      symlinks the library instead of copying it (the tests: a debug build is large)
set -eu

here=$(cd "$(dirname "$0")" && pwd)
root=$(dirname "$here")
profile=dev
lib_dir=
link=
while [ $# -gt 1 ]; do
	case "$1" in
	--release) profile=release; shift ;;
	--lib-dir) lib_dir=$2; shift 2 ;;
	--link) link=1; shift ;;
	*) echo "unknown option $1" >&2; exit 2 ;;
	esac
done
[ $# -eq 1 ] || { echo "usage: $0 [--release | --lib-dir DIR] [--link] PREFIX" >&2; exit 2; }
mkdir -p "$1"
prefix=$(cd "$1" && pwd)

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
[ -f "$lib_dir/libopae_c.so" ] || { echo "$lib_dir/libopae_c.so not found" >&2; exit 1; }

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
