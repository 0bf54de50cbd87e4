#!/bin/sh
# Build and run every test twice: an optimised build, then one under
# AddressSanitizer + UndefinedBehaviorSanitizer.  Fuzz targets replay their
# seed corpora as tests in both; where clang is present each libFuzzer target
# also fuzzes for 20 s.  Exits non-zero on any failure.
#   scripts/test.sh              everything (installs missing packages first)
#   scripts/test.sh --fast       optimised build only
#   scripts/test.sh --no-deps    skip the package step (also MROCE_NO_DEPS=1)
#   scripts/test.sh -L unit      only the tests with a CTest label (regex)
#   scripts/test.sh -R engine    only the tests whose name matches (regex)
#   scripts/test.sh -E prov      all but the tests whose name matches
# -L, -R and -E go to ctest as given and may repeat; with any of them the
# libFuzzer run is skipped.  The labels: unit, e2e, conform, fabric, mpi,
# sim, fuzz, lint (see the README's Tests section).
set -e
cd "$(dirname "$0")/.."
fast=0
deps=1
[ "${MROCE_NO_DEPS:-0}" = 1 ] && deps=0
select=""
while [ $# -gt 0 ]; do
  case "$1" in
    --fast) fast=1 ;;
    --no-deps) deps=0 ;;
    -L|-R|-E)
      [ $# -ge 2 ] || { echo "scripts/test.sh: $1 needs an argument" >&2; exit 2; }
      select="$select $1 '$2'"
      shift ;;
    -h|--help) sed -n '2,14s/^# \{0,1\}//p' "$0"; exit 0 ;;
    *) echo "scripts/test.sh: unknown option $1 (try --help)" >&2; exit 2 ;;
  esac
  shift
done
[ "$deps" = 1 ] && sh scripts/deps.sh
jobs=$(nproc)
log=$(mktemp)
trap 'rm -f "$log" "$log.run"' EXIT

# ctest's exit status is lost in a pipe, so check its summary line instead.
# A selection that matches no test is an error, not a pass.
run_ctest() {
  (cd "$1" && eval ctest --output-on-failure -j"$jobs" $select) 2>&1 |
    tee "$log.run"
  cat "$log.run" >> "$log"
  grep -q '100% tests passed' "$log.run" || { echo "tests failed in $1"; exit 1; }
}

echo "== release build"
cmake -S . -B build -DCMAKE_BUILD_TYPE=Release >/dev/null
cmake --build build -j"$jobs"
run_ctest build
if [ "$fast" = 0 ]; then
  echo "== AddressSanitizer + UBSan build"
  cmake -S . -B build-asan -DCMAKE_BUILD_TYPE=Debug -DMROCE_SANITIZE=ON \
        -DCMAKE_C_FLAGS=-O1 >/dev/null
  cmake --build build-asan -j"$jobs"
  ASAN_OPTIONS=detect_leaks=1 UBSAN_OPTIONS=print_stacktrace=1 run_ctest build-asan
  if [ -z "$select" ] && command -v clang >/dev/null 2>&1; then
    echo "== libFuzzer smoke run (clang, ASan+UBSan): each target 20 s"
    CC=clang cmake -S . -B build-fuzz -DCMAKE_BUILD_TYPE=Debug -DMROCE_FUZZ=ON \
          -DMROCE_SANITIZE=ON -DCMAKE_C_FLAGS=-O1 >/dev/null
    cmake --build build-fuzz -j"$jobs"
    for f in build-fuzz/fuzz/fuzz_*; do
      [ -x "$f" ] || continue
      name=$(basename "$f")
      work=$(mktemp -d)
      cp -r "fuzz/corpus/$name/." "$work/" 2>/dev/null || true
      # New inputs go to a scratch copy: the tree's corpus stays as committed.
      if ! "$f" -max_total_time=20 "$work" >"$work.log" 2>&1; then
        tail -40 "$work.log"; echo "fuzz: $name found a failure"; exit 1
      fi
      echo "fuzz: $name: $(grep -o 'Done [0-9]* runs' "$work.log" | tail -1), no failure"
      rm -rf "$work" "$work.log"
    done
  fi
fi
# One closing line for the whole run.
passed=$(sed -n 's/.*tests passed, 0 tests failed out of \([0-9]*\).*/\1/p' "$log" |
         awk '{s+=$1} END {print s+0}')
echo "scripts/test.sh: $passed passed, 0 failed"
