#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
# Runs every libFuzzer target of a TXATTN_FUZZ build for SECONDS each, two at a time (CI has two
# cores), each from its committed corpus (tests/fuzz/corpus/<target>, read only: what a run adds
# goes to BUILD/fuzz-runs/<target>/corpus). A target that finds something fails the run, and its
# output and the input that did it (hex) are printed: commit that file under
# tests/fuzz/regressions/<target>/ once fixed, and the ctest fuzz_<target> replays it from then on.
# Usage: tests/fuzz/run.sh BUILD_DIR [SECONDS]
set -uo pipefail
build=${1:?usage: run.sh BUILD_DIR [SECONDS]}
seconds=${2:-60}
src=$(cd "$(dirname "$0")" && pwd)
targets=(problem cache_spec table shape) # the heaviest first, paired with the lightest

# allocator_may_return_null: a malloc too large must fail as the library expects, not abort.
# -timeout: an input that takes 20 s is a hang. -malloc_limit_mb: the library may try (and fail)
# to allocate for a huge problem; that is refused, not a finding, up to what the OS refuses.
export ASAN_OPTIONS=allocator_may_return_null=1:detect_leaks=1
export UBSAN_OPTIONS=print_stacktrace=1:halt_on_error=1

run_one() {
  local t=$1 dir="$build/fuzz-runs/$1"
  rm -rf "$dir"
  mkdir -p "$dir/corpus"
  local extra=()
  if [[ -f $src/$t.dict ]]; then extra=("-dict=$src/$t.dict"); fi
  # LeakSanitizer's tracer crashed (signal 11) stopping the problem harness's libomp threads at
  # exit, which libFuzzer then reports as a crash of an empty input: the ctest fuzz_problem of
  # the ASan build (gcc, libgomp) checks its corpus for leaks instead
  local asan=$ASAN_OPTIONS
  if [[ $t == problem ]]; then asan+=:detect_leaks=0; fi
  ASAN_OPTIONS=$asan "$build/tests/fuzz/txattn_fuzz_$t" -max_total_time="$seconds" -timeout=20 \
    -malloc_limit_mb=16384 -print_final_stats=1 -artifact_prefix="$dir/" "${extra[@]}" \
    "$dir/corpus" "$src/corpus/$t" >"$dir/log" 2>&1
  echo $? >"$dir/status"
}

failed=0
for ((i = 0; i < ${#targets[@]}; i += 2)); do
  pair=("${targets[@]:i:2}")
  for t in "${pair[@]}"; do run_one "$t" & done
  wait
  for t in "${pair[@]}"; do
    dir="$build/fuzz-runs/$t"
    runs=$(sed -n 's/^stat::number_of_executed_units: *//p' "$dir/log" | tail -n 1)
    cov=$(grep -oE 'cov: [0-9]+' "$dir/log" | tail -n 1)
    if [[ $(cat "$dir/status") == 0 ]]; then
      printf 'fuzz %-10s %8s executions in %ss, %s, corpus +%s files: no finding\n' "$t" \
        "${runs:-?}" "$seconds" "${cov:-cov: ?}" "$(find "$dir/corpus" -type f | wc -l)"
    else
      failed=1
      printf '\nfuzz %s FOUND SOMETHING (exit %s) after %s executions; its output:\n' "$t" \
        "$(cat "$dir/status")" "${runs:-?}"
      tail -n 60 "$dir/log"
      for f in "$dir"/crash-* "$dir"/leak-* "$dir"/timeout-* "$dir"/oom-*; do
        [[ -f $f ]] || continue
        printf -- '-- the input, %s (%s bytes), as hex:\n' "$f" "$(stat -c %s "$f")"
        od -An -tx1 -v "$f" | head -n 40
        printf -- '-- reproduce: %s %s\n' "$build/tests/fuzz/txattn_fuzz_$t" "$f"
      done
    fi
  done
done
exit $failed
