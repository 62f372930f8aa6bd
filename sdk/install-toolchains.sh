#!/usr/bin/env bash
# Installs the toolchains that build C, JavaScript and Python plugins, from the package
# registries only: Debian's clang, lld and wasi-libc; jco and TypeScript from npm
# (sdk/js/package-lock.json pins them) and componentize-py from PyPI
# (sdk/python/requirements.txt pins it), both through `accelhost-sdk toolchains --install`
# into the tool's per-user directory. Give languages to install only those:
#   sdk/install-toolchains.sh [c] [js] [python]
# Each step is skipped when what it installs is already there.
set -euo pipefail
sdk="$(cd "$(dirname "$0")" && pwd)"
languages=("$@")
[ ${#languages[@]} -eq 0 ] && languages=(c js python)

as_root=()
[ "$(id -u)" -ne 0 ] && as_root=(sudo)

for language in "${languages[@]}"; do
    case "$language" in
    c)
        packages=(clang lld wasi-libc libclang-rt-dev-wasm32)
        installed="$(dpkg-query -W -f='${Status}\n' "${packages[@]}" 2>/dev/null | grep -c '^install ok installed$' || true)"
        if [ "$installed" -eq ${#packages[@]} ]; then
            echo "c: ${packages[*]} are installed"
        else
            echo "c: installing ${packages[*]} (apt)"
            "${as_root[@]}" apt-get update -qq
            DEBIAN_FRONTEND=noninteractive "${as_root[@]}" apt-get install -y -qq --no-install-recommends "${packages[@]}"
        fi
        ;;
    js | python)
        # The SDK tool installs them into its per-user directory ($ACCELHOST_SDK_HOME, else
        # ~/.cache/accelhost-sdk), where every checkout and the installed tool find them.
        (cd "$sdk/.." && cargo run --quiet -p accelhost-sdk-tool -- toolchains --install "$language")
        ;;
    *)
        echo "unknown language '$language': expected c, js or python" >&2
        exit 2
        ;;
    esac
done
