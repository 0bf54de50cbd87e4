#!/bin/sh
# Build everything (installing Debian packages first) and run the main demo:
# the MetaRoCE engine moving data over the deterministic network model under
# loss, reordering, duplication and a dead path.
set -e
cd "$(dirname "$0")/.."
sh scripts/deps.sh
cmake -S . -B build -DCMAKE_BUILD_TYPE=Release >/dev/null
cmake --build build -j"$(nproc)"
exec build/tools/mroce-demo "$@"
