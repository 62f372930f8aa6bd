#!/usr/bin/env bash
# Installs the Python packages a test drives accelhost with, pinned in
# tests/support/<name>-requirements.txt, from PyPI into a virtual environment of their own:
# $ACCELHOST_<NAME>_HOME (the name in capitals, '-' as '_'), else ~/.cache/accelhost-<name>.
# A no-op when they are there. Usage: install-python.sh <name> (grpc-python, opencl-python).
set -euo pipefail
here="$(cd "$(dirname "$0")" && pwd)"
name="${1:?usage: install-python.sh <name>, for tests/support/<name>-requirements.txt}"
requirements="$here/$name-requirements.txt"
if [ ! -f "$requirements" ]; then
    echo "install-python.sh: no $requirements" >&2
    exit 2
fi
variable="ACCELHOST_$(echo "$name" | tr 'a-z-' 'A-Z_')_HOME"
home="${!variable:-$HOME/.cache/accelhost-$name}"
if [ -x "$home/bin/python" ] && cmp -s "$requirements" "$home/requirements.txt"; then
    echo "$name: installed in $home"
    exit 0
fi
if ! python3 -c 'import venv, ensurepip' 2>/dev/null; then
    as_root=()
    [ "$(id -u)" -ne 0 ] && as_root=(sudo)
    "${as_root[@]}" apt-get update -qq
    DEBIAN_FRONTEND=noninteractive "${as_root[@]}" apt-get install -y -qq --no-install-recommends python3-venv
fi
echo "$name: installing into $home (pip)"
rm -rf "$home"
python3 -m venv "$home"
"$home/bin/pip" install --quiet -r "$requirements"
cp "$requirements" "$home/requirements.txt"
