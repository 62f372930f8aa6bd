#!/usr/bin/env bash
# A short coverage-guided run of every fuzz target, as CI does it: builds the libFuzzer
# binaries with cargo-fuzz (installing it if needed) and fuzzes each target for FUZZ_SECONDS
# (default 15) from its seed corpus. What a run finds goes to a scratch directory; a crashing
# input goes to host/fuzz/artifacts/<target>/ and the run's whole output is printed. Long runs
# are in README.md.
set -euo pipefail
cd "$(dirname "$0")/.."

seconds="${FUZZ_SECONDS:-15}"
# Each step's time, printed as it ends, so that a slow CI run says where the time went.
step_started=$SECONDS
step() {
    echo "fuzz: $1 took $((SECONDS - step_started)) s" >&2
    step_started=$SECONDS
}
cargo install cargo-fuzz --version 0.13.2 --locked
step "installing cargo-fuzz"

scratch="$(mktemp -d)"
trap 'rm -rf "$scratch"' EXIT
target_dir="$(cargo metadata --format-version 1 --no-deps | grep -o '"target_directory":"[^"]*"' | cut -d'"' -f4)"
# A short run's build: every crate unoptimized (the dev profile's overrides optimize Cranelift
# and the library for the tests) and comparisons not traced. Built as the overrides say and
# with traced comparisons, the instrumented tree took 662 s of a clean clone's CI, this way
# 402 s; and unoptimized code that reports every comparison to libFuzzer ran the imports
# target's big answers past its time oracle (the ledger's allocator compares on every
# allocation). Long runs (README.md) build as cargo-fuzz does by default. The RUSTFLAGS go to
# cargo-fuzz's builds only: the test build below keeps the profile's. A rustc wrapper in the
# caller's environment (RUSTC_WORKSPACE_WRAPPER, as `cargo clippy` sets it) is not for them.
fuzz_build=(--dev --sanitizer none --no-trace-compares)
fuzz_rustflags="${RUSTFLAGS:-} -Copt-level=0"
env -u RUSTC_WORKSPACE_WRAPPER -u CLIPPY_ARGS RUSTFLAGS="$fuzz_rustflags" \
    cargo fuzz build "${fuzz_build[@]}"
step "building the targets"
# The compile target's plugin files compile in a worker: the workspace's accelhost binary, as
# the test command builds it (fresh after CI's `cargo test --workspace`; `cargo build --bins`
# would build the library again with other features).
cargo test --workspace --no-run --quiet
export ACCELHOST_COMPILE_WORKER="$target_dir/debug/accelhost"
# The targets that start hosts (imports, doors) load their plugins from the compile cache the
# test command fills: the fuzz build's Cranelift, instrumented, takes 40-50 s for them, which
# would be each run's start (the compile target keeps a cache of its own, by design).
export ACCELHOST_CACHE_DIR="${ACCELHOST_CACHE_DIR:-$target_dir/tmp/accelhost-cache}"
step "building the compile worker"
# One libFuzzer process per target, each on one core: as many at once as there are cores,
# each target that starts hosts (imports, compile, doors) beside one that does not. The
# targets that time calls leave room for scheduling in their oracles. A target passes only by
# saying so: one whose job ended any other way (its setup failing included) has failed.
fuzz_one() {
    local target="$1" started=$SECONDS
    mkdir -p "$scratch/$target" "fuzz/artifacts/$target"
    if "$target_dir/x86_64-unknown-linux-gnu/debug/$target" -artifact_prefix="fuzz/artifacts/$target/" \
        -max_total_time="$seconds" -timeout=30 "$scratch/$target" "fuzz/corpus/$target" \
        >"$scratch/$target.log" 2>&1; then
        echo "fuzz $target: $(grep -E '^Done' "$scratch/$target.log" | tail -n 1) ($((SECONDS - started)) s in all)"
        touch "$scratch/$target.passed"
    fi
}
targets=(imports config compile serve_config doors authority xclbin ert cxl)
slots="$(nproc)"
for target in "${targets[@]}"; do
    while [ "$(jobs -rp | wc -l)" -ge "$slots" ]; do
        wait -n || true
    done
    fuzz_one "$target" &
done
wait
failed=0
for target in "${targets[@]}"; do
    if [ ! -e "$scratch/$target.passed" ]; then
        cat "$scratch/$target.log" 2>/dev/null || true
        echo "fuzz target $target failed; the input is in host/fuzz/artifacts/$target/" >&2
        failed=1
    fi
done
step "fuzzing ${#targets[@]} targets, $slots at a time"
exit "$failed"
