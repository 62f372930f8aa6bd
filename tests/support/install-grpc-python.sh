#!/usr/bin/env bash
# Installs grpcio and grpcio-tools (pinned in grpc-python-requirements.txt) from PyPI into a
# virtual environment of their own, where tests/grpc_python.rs finds them:
# $ACCELHOST_GRPC_PYTHON_HOME, else ~/.cache/accelhost-grpc-python. A no-op when they are there.
set -euo pipefail
here="$(cd "$(dirname "$0")" && pwd)"
home="${ACCELHOST_GRPC_PYTHON_HOME:-$HOME/.cache/accelhost-grpc-python}"
requirements="$here/grpc-python-requirements.txt"
if [ -x "$home/bin/python" ] && cmp -s "$requirements" "$home/requirements.txt"; then
    echo "grpc-python: grpcio is installed in $home"
    exit 0
fi
if ! python3 -c 'import venv, ensurepip' 2>/dev/null; then
    as_root=()
    [ "$(id -u)" -ne 0 ] && as_root=(sudo)
    "${as_root[@]}" apt-get update -qq
    DEBIAN_FRONTEND=noninteractive "${as_root[@]}" apt-get install -y -qq --no-install-recommends python3-venv
fi
echo "grpc-python: installing grpcio into $home (pip)"
rm -rf "$home"
python3 -m venv "$home"
"$home/bin/pip" install --quiet -r "$requirements"
cp "$requirements" "$home/requirements.txt"
