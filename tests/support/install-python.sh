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
# Source archives whose files a test needs and the wheels lack (PyOpenCL's tests are in its
# sdist only), one "# archive: <url> sha256=<hex> <directory in it> <name under home>" line each
# in the requirements: fetched as a file (pip download would build the sdist's metadata, which
# compiles CMake from source), checked against the pinned hash, and the directory unpacked.
# Each only when its directory is missing.
fetch_archives() {
    { grep '^# archive: ' "$requirements" || true; } | while read -r _ _ url hash inside dest; do
        [ -d "$home/$dest" ] && continue
        echo "$name: unpacking $inside of $url into $home/$dest"
        "$home/bin/python" - "$url" "${hash#sha256=}" "$inside" "$home/$dest" <<'PY'
import hashlib, io, shutil, sys, tarfile, urllib.request
url, sha256, inside, dest = sys.argv[1:]
data = urllib.request.urlopen(url, timeout=180).read()
digest = hashlib.sha256(data).hexdigest()
if digest != sha256:
    sys.exit(f"install-python.sh: {url} has sha256 {digest}, not the pinned {sha256}")
prefix = inside.rstrip("/") + "/"
partial = dest + ".partial"
shutil.rmtree(partial, ignore_errors=True)
with tarfile.open(fileobj=io.BytesIO(data)) as archive:
    members = [m for m in archive.getmembers() if m.isfile() and m.name.startswith(prefix)]
    if not members:
        sys.exit(f"install-python.sh: {url} has no {inside}/")
    for member in members:
        member.name = member.name[len(prefix):]
        archive.extract(member, partial, filter="data")
shutil.move(partial, dest)
PY
    done
}
if [ -x "$home/bin/python" ] && cmp -s "$requirements" "$home/requirements.txt"; then
    fetch_archives
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
fetch_archives
cp "$requirements" "$home/requirements.txt"
