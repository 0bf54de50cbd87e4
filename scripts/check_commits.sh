#!/bin/sh
# check_commits.sh - checks commit subjects against CONTRIBUTING.md's rule:
# at most 72 characters (imperative mood, the detail in the body).  Prints
# each offending commit (hash, length, subject) and exits 1 if there is
# one.  It only reads history; it never rewrites it.
#   usage: scripts/check_commits.sh [RANGE]
#     RANGE  a git revision range, e.g. main..HEAD; by default the commits
#            since origin/main, or the last 20 where there is no origin/main
set -eu
max=72
if [ $# -ge 1 ]; then
    range=$1
elif git rev-parse -q --verify origin/main >/dev/null 2>&1; then
    range=origin/main..HEAD
else
    range="-20 HEAD"
fi
# shellcheck disable=SC2086  # "-20 HEAD" is two arguments
git log --no-merges --format='%h %s' $range > "${TMPDIR:-/tmp}/check_commits.$$"
trap 'rm -f "${TMPDIR:-/tmp}/check_commits.$$"' EXIT
total=0
bad=0
while IFS= read -r line; do
    total=$((total + 1))
    hash=${line%% *}
    subject=${line#* }
    len=$(printf '%s' "$subject" | wc -m)
    if [ "$len" -gt "$max" ]; then
        bad=$((bad + 1))
        printf '%s %4d  %s\n' "$hash" "$len" "$subject"
    fi
done < "${TMPDIR:-/tmp}/check_commits.$$"
echo "check_commits: $bad of $total subject(s) in '$range' longer than $max characters"
[ "$bad" -eq 0 ]
