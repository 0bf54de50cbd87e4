#!/bin/sh
# Prints a digest of everything the deterministic parts of the tree produce:
# each simulator scenario's CSVs (sim/scenarios, with the columns that
# measure the host rather than the simulation removed: wall and CPU time,
# event rates, engine bytes per QP), the demo's output over the network
# model, and the list of registered tests.  A refactoring that must not
# change behaviour keeps this digest identical:
#   scripts/behaviour_digest.sh build > before.txt   (on the old tree)
#   scripts/behaviour_digest.sh build > after.txt    (on the new tree)
#   diff before.txt after.txt
# Takes a few minutes (the 128-host scenarios).
set -eu
build=${1:-build}
here=$(cd "$(dirname "$0")/.." && pwd)
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
# Drops the named CSV columns, matched by header.
strip_cols() {
  awk -F, -v drop="wall_s,events_per_s,cpu_s,events_per_cpu_s,engine_bytes_per_qp" '
    BEGIN { n = split(drop, d, ","); for (i = 1; i <= n; i++) skip[d[i]] = 1 }
    NR == 1 { for (i = 1; i <= NF; i++) keep[i] = !($i in skip) }
    { out = ""; sep = ""
      for (i = 1; i <= NF; i++) if (keep[i]) { out = out sep $i; sep = "," }
      print out }' "$1"
}
for s in "$here"/sim/scenarios/*.txt "$here"/sim/scenarios/*.json; do
  name=$(basename "$s")
  "$build/sim/mroce-sim" -q -o "$work/$name" "$s" >/dev/null
  for csv in "$work/$name"/*.csv; do
    printf '%s  sim %s/%s\n' "$(strip_cols "$csv" | sha256sum | cut -c1-16)" \
      "$name" "$(basename "$csv")"
  done
done
printf '%s  demo output\n' "$("$build/tools/mroce-demo" | sha256sum | cut -c1-16)"
(cd "$build" && ctest -N) | sed -n 's/^ *Test *#[0-9]*: /test /p' | sort
