#!/usr/bin/env bash
# Runs every fuzz target (or those named) for SECONDS each, one after the other, and prints one line
# per target: runs, seconds, crashes. Installs cargo-fuzz from crates.io if it is missing. A target's
# full libFuzzer log goes to fuzz/logs/TARGET.log; a crash prints its tail and the failing input, and
# the script exits 1. Runs on stable Rust: no sanitizer (`-s none`), the core being safe Rust.
#
#   fuzz/run.sh 10                 # the smoke run of `make test`
#   fuzz/run.sh 600 trec_run       # one target, ten minutes
set -euo pipefail
cd "$(dirname "$0")"
seconds=${1:?usage: fuzz/run.sh SECONDS [TARGET...]}
shift
command -v cargo-fuzz >/dev/null || cargo install cargo-fuzz --locked --version 0.13.2
targets=("$@")
if [ ${#targets[@]} -eq 0 ]; then
    mapfile -t targets < <(cargo fuzz list)
fi
mkdir -p logs
cargo fuzz build -s none >logs/build.log 2>&1 || { tail -40 logs/build.log; exit 1; }
for target in "${targets[@]}"; do
    mkdir -p "corpus/$target" "seeds/$target"
    dict=()
    [ -f "dicts/$target.dict" ] && dict=("-dict=dicts/$target.dict")
    log="logs/$target.log"
    started=$SECONDS
    if cargo fuzz run -s none "$target" "corpus/$target" "seeds/$target" -- \
        -max_total_time="$seconds" -print_final_stats=1 "${dict[@]}" >"$log" 2>&1; then
        runs=$(grep -o '^stat::number_of_executed_units: *[0-9]*' "$log" | grep -o '[0-9]*$' || echo "?")
        echo "fuzz $target: $runs runs in $((SECONDS - started)) s, 0 crashes"
    else
        echo "fuzz $target: FAILED after $((SECONDS - started)) s (a crash, or see $log)"
        grep -v '^#[0-9]' "$log" | grep -v '^ *[0-9]*: \|^ *at ' | tail -40
        exit 1
    fi
done
