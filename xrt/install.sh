#!/bin/sh
# Installs XRT's native API over accelhost into a prefix, and what XRT installs beside it for
# Vitis OpenCL hosts: PREFIX/include/CL/cl_ext_xilinx.h. `--help` says how.
set -eu
here=$(cd "$(dirname "$0")" && pwd)
# The library, include/xrt, include/experimental and xrt.pc; it checks every argument.
sh "$here/../scripts/install-door.sh" xrt "$@"
# The arguments held, so what is not an option is PREFIX.
prefix=
while [ $# -gt 0 ]; do
	case "$1" in
	-h | --help)
		cat <<HELP

and beside XRT's API, as XRT does, for Vitis OpenCL hosts (with the OpenCL headers):
  PREFIX/include/CL/cl_ext_xilinx.h (Xilinx's OpenCL extensions)
HELP
		exit 0
		;;
	--lib-dir) shift 2 ;;
	--)
		prefix=$2
		break
		;;
	-*) shift ;;
	*)
		prefix=$1
		shift
		;;
	esac
done
mkdir -p "$prefix/include/CL"
cp "$here/include/CL/cl_ext_xilinx.h" "$prefix/include/CL/cl_ext_xilinx.h"
