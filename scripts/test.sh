#!/bin/sh
# Build and run every test twice: an optimised build, then one under
# AddressSanitizer + UndefinedBehaviorSanitizer.  Fuzz targets replay their
# seed corpora as tests in both.  Exits non-zero on any failure.
#   scripts/test.sh            both builds
#   scripts/test.sh --fast     optimised build only
set -e
cd "$(dirname "$0")/.."
sh scripts/deps.sh
jobs=$(nproc)
echo "== release build"
cmake -S . -B build -DCMAKE_BUILD_TYPE=Release >/dev/null
cmake --build build -j"$jobs"
(cd build && ctest --output-on-failure -j"$jobs")
if [ "${1:-}" = "--fast" ]; then exit 0; fi
echo "== AddressSanitizer + UBSan build"
cmake -S . -B build-asan -DCMAKE_BUILD_TYPE=Debug -DMROCE_SANITIZE=ON \
      -DCMAKE_C_FLAGS=-O1 >/dev/null
cmake --build build-asan -j"$jobs"
(cd build-asan && ASAN_OPTIONS=detect_leaks=1 UBSAN_OPTIONS=print_stacktrace=1 \
   ctest --output-on-failure -j"$jobs")
