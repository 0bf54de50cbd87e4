#!/bin/sh
# Build and run every test twice: an optimised build, then one under
# AddressSanitizer + UndefinedBehaviorSanitizer.  Fuzz targets replay their
# seed corpora as tests in both; where clang is present each libFuzzer target
# also fuzzes for 20 s.  Exits non-zero on any failure.
#   scripts/test.sh            everything
#   scripts/test.sh --fast     optimised build only
set -e
cd "$(dirname "$0")/.."
sh scripts/deps.sh
jobs=$(nproc)
log=$(mktemp)
trap 'rm -f "$log" "$log.run"' EXIT

# ctest's exit status is lost in a pipe, so check its summary line instead.
run_ctest() {
  (cd "$1" && ctest --output-on-failure -j"$jobs") 2>&1 | tee "$log.run"
  cat "$log.run" >> "$log"
  grep -q '100% tests passed' "$log.run" || { echo "tests failed in $1"; exit 1; }
}

echo "== release build"
cmake -S . -B build -DCMAKE_BUILD_TYPE=Release >/dev/null
cmake --build build -j"$jobs"
run_ctest build
if [ "${1:-}" != "--fast" ]; then
  echo "== AddressSanitizer + UBSan build"
  cmake -S . -B build-asan -DCMAKE_BUILD_TYPE=Debug -DMROCE_SANITIZE=ON \
        -DCMAKE_C_FLAGS=-O1 >/dev/null
  cmake --build build-asan -j"$jobs"
  ASAN_OPTIONS=detect_leaks=1 UBSAN_OPTIONS=print_stacktrace=1 run_ctest build-asan
  if command -v clang >/dev/null 2>&1; then
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
