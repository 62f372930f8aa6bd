#!/usr/bin/env bash
# Records a CPU profile of each `accelhost bench` row that misses its target, from the
# criterion benches that measure the same code, and writes each as text beside this script:
# the command, then perf's flat report (self time, entries of 1 % and more).
#   host/benches/profiles/record.sh          # all of them (about two minutes)
#   host/benches/profiles/record.sh reset    # one: reset, open-close, plugin-start, vadd, nlb0, enumerate
# Needs perf (`apt-get install linux-perf`); `cpu-clock` sampling works without hardware
# counters. Builds the benches with the bench profile first.
set -euo pipefail
here="$(cd "$(dirname "$0")" && pwd)"
cd "$here/../../.."
cargo bench -p accelhost-bench --no-run --quiet 2>/dev/null
bench() { ls -t target/release/deps/"$1"-* | grep -v '\.d$' | head -1; }

declare -A rows=(
    [reset]="control|accelhost/reset"
    [open-close]="control|accelhost/open\\+close"
    [plugin-start]="control|accelhost/plugin start from disk cache"
    [vadd]="data|vadd 16 Mi/xocl emulator"
    [nlb0]="data|nlb0 64 MiB/loopback"
    [enumerate]="scale|enumerate/accelhost/10 plugins x 1000"
)
names=("$@")
[ ${#names[@]} -eq 0 ] && names=(reset open-close plugin-start vadd nlb0 enumerate)
for name in "${names[@]}"; do
    IFS='|' read -r target filter <<<"${rows[$name]:?unknown row '$name'}"
    binary="$(bench "$target")"
    data="$(mktemp)"
    command=(perf record -e cpu-clock -F 4000 -g -o "$data" "$binary" --bench "$filter" --profile-time 8)
    echo "profiling $name: ${command[*]}" >&2
    "${command[@]}" >/dev/null 2>&1
    {
        echo "# $name: $filter (cli/benches/$target.rs), $(date -u +%Y-%m-%d)"
        echo "# made by host/benches/profiles/record.sh $name:"
        echo "#   ${command[*]/#$data/perf.data}"
        echo "#   perf report --stdio --no-children --percent-limit 1 -g none --sort dso,symbol"
        echo
        perf report -i "$data" --stdio --no-children --percent-limit 1 -g none --sort dso,symbol 2>/dev/null \
            | grep -E '^ +[0-9]' | sed -E 's/[[:space:]]+-[[:space:]]+-[[:space:]]*$//; s/[[:space:]]+$//'
    } >"$here/$name.txt"
    rm -f "$data" "$data.old"
done
