#!/usr/bin/env bash
# Builds an earlier tree's `accelhost` with the bench profile, for the regression guard
# against it: `accelhost bench --check --against "$(bench/baseline.sh COMMIT)"`. Prints the
# binary's path: target/bench-baseline/<commit>/accelhost (built once per commit; the native
# baseline plugin is taken from this tree's build, the same for both).
# The earlier tree is checked out in a temporary worktree and built into a target folder of
# its own (target/bench-baseline/build), so that this tree's build is left as it is; the
# dependencies built there serve every later baseline.
set -euo pipefail
root="$(git rev-parse --show-toplevel)"
commit="$(git -C "$root" rev-parse --verify "${1:?usage: bench/baseline.sh COMMIT}^{commit}")"
out="$root/target/bench-baseline/$commit"
if [ -x "$out/accelhost" ]; then
    echo "$out/accelhost"
    exit 0
fi
tree="$(mktemp -d "${TMPDIR:-/tmp}/accelhost-baseline-XXXXXX")"
cleanup() { git -C "$root" worktree remove --force "$tree" 2>/dev/null || rm -rf "$tree"; }
trap cleanup EXIT
git -C "$root" worktree add --quiet --detach "$tree" "$commit"
echo "building $commit with the bench profile (the first baseline builds its dependencies too) ..." >&2
(cd "$tree" && CARGO_TARGET_DIR="$root/target/bench-baseline/build" \
    cargo build --quiet --profile bench -p accelhost-cli >&2)
mkdir -p "$out"
cp "$root/target/bench-baseline/build/release/accelhost" "$out/accelhost"
echo "$out/accelhost"
