#!/usr/bin/env bash
# A short cargo-fuzz run of every target, as CI does it: installs cargo-fuzz if needed, builds
# the libFuzzer binaries (a debug build: the quickest to make, and the one with overflow
# checks) and fuzzes each target for FUZZ_SECONDS (default 15) from its seed corpus. What a
# run finds goes to a scratch directory; a crashing input goes to host/fuzz/artifacts/<target>/
# and the run's whole output is printed. Long runs are in README.md.
set -euo pipefail
cd "$(dirname "$0")/.."

seconds="${FUZZ_SECONDS:-15}"
# Each step's time, printed as it ends, so that a slow CI run says where the time went.
step_started=$SECONDS
# Ends a step: sets step_took to its seconds and starts the next (not in a subshell, which
# would start nothing).
end_step() {
    step_took=$((SECONDS - step_started))
    step_started=$SECONDS
}
step() {
    end_step
    echo "fuzz: $1 took $step_took s" >&2
}
cargo install cargo-fuzz --version 0.13.2 --locked
step "installing cargo-fuzz"

scratch="$(mktemp -d)"
trap 'rm -rf "$scratch"' EXIT
# A short run's build: every crate unoptimized (the dev profile's overrides optimize Cranelift
# and the library for the tests) and comparisons not traced. Built as the overrides say and
# with traced comparisons, the instrumented tree took 662 s of a clean clone's CI, this way
# 402 s; and unoptimized code that reports every comparison to libFuzzer ran the imports
# target's big answers past its time oracle (the ledger's allocator compares on every
# allocation). Long runs (README.md) build as cargo-fuzz does by default. The RUSTFLAGS go to
# cargo-fuzz's builds only: the test build below keeps the profile's.
fuzz_build=(--dev --sanitizer none --no-trace-compares)
fuzz_rustflags="${RUSTFLAGS:-} -Copt-level=0"
RUSTFLAGS="$fuzz_rustflags" cargo fuzz build "${fuzz_build[@]}"
step "building the targets"
# The compile target's plugin files compile in a worker: the workspace's accelhost binary, as
# the test command builds it (fresh after CI's `cargo test --workspace`; `cargo build --bins`
# would build the library again with other features).
cargo test --workspace --no-run --quiet
target_dir="$(cargo metadata --format-version 1 --no-deps | grep -o '"target_directory":"[^"]*"' | cut -d'"' -f4)"
export ACCELHOST_COMPILE_WORKER="$target_dir/debug/accelhost"
# The targets that start hosts (imports, doors) load their plugins from the compile cache the
# test command fills: the fuzz build's Cranelift, instrumented, takes 40-50 s for them, which
# would be each run's start (the compile target keeps a cache of its own, by design).
export ACCELHOST_CACHE_DIR="${ACCELHOST_CACHE_DIR:-$target_dir/tmp/accelhost-cache}"
step "building the compile worker"
for target in config serve_config authority xclbin ert cxl imports compile doors; do
    mkdir -p "$scratch/$target"
    log="$scratch/$target.log"
    if RUSTFLAGS="$fuzz_rustflags" cargo fuzz run "${fuzz_build[@]}" "$target" "$scratch/$target" "fuzz/corpus/$target" -- \
        -max_total_time="$seconds" -timeout=30 >"$log" 2>&1; then
        end_step
        echo "fuzz $target: $(grep -E '^Done' "$log" | tail -n 1) ($step_took s in all)"
    else
        cat "$log"
        echo "fuzz target $target failed; the input is in host/fuzz/artifacts/$target/" >&2
        exit 1
    fi
done
