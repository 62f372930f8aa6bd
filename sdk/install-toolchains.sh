#!/usr/bin/env bash
# Installs the toolchains that build C, JavaScript and Python plugins, from the package
# registries only: Debian's clang, lld and wasi-libc; jco and TypeScript from npm into
# sdk/js/node_modules (package-lock.json pins them); componentize-py from PyPI into
# sdk/python/.venv (requirements.txt pins it). Give languages to install only those:
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
    js)
        if [ -f "$sdk/js/node_modules/.package-lock.json" ] &&
            [ "$sdk/js/node_modules/.package-lock.json" -nt "$sdk/js/package-lock.json" ]; then
            echo "js: sdk/js/node_modules is up to date"
        else
            # The lock pins every version. Not `npm ci`: it refuses a lock that lacks optional
            # packages of other platforms the registry does not carry (win32-arm64, musl, ...).
            echo "js: npm install in sdk/js (package-lock.json)"
            npm install --prefix "$sdk/js" --no-save --no-audit --no-fund --loglevel=error
        fi
        ;;
    python)
        if [ ! -x "$sdk/python/.venv/bin/pip" ]; then
            echo "python: creating sdk/python/.venv"
            python3 -m venv "$sdk/python/.venv"
        fi
        echo "python: pip install -r sdk/python/requirements.txt"
        "$sdk/python/.venv/bin/pip" install --quiet --disable-pip-version-check -r "$sdk/python/requirements.txt"
        ;;
    *)
        echo "unknown language '$language': expected c, js or python" >&2
        exit 2
        ;;
    esac
done
