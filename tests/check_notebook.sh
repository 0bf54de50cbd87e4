#!/bin/sh
# check_notebook.sh - code comments say what and why in the present: no
# dates and no "tried and dropped" in the sources (CONTRIBUTING.md,
# Comments).  History belongs in git and in the area's LOG.md, which
# lives outside these directories (docs/LOG.md, bench/LOG.md, sim/LOG.md).
# Prints every offending line and fails if there is one.
#   usage: tests/check_notebook.sh [SOURCE_DIR]   (default: the tree above)
set -u
root=${1:-$(cd "$(dirname "$0")/.." && pwd)}
cd "$root" || exit 2
dirs="src prov sim/src conform tools"
for d in $dirs; do
    [ -d "$d" ] || { echo "check_notebook: $root/$d is missing" >&2; exit 2; }
done
hits=$(grep -rnE '20[0-9]{2}-[0-9]{2}-[0-9]{2}|[Tt]ried and dropped' $dirs)
if [ -n "$hits" ]; then
    printf '%s\n' "$hits"
    n=$(printf '%s\n' "$hits" | wc -l)
    echo "check_notebook: $n line(s) with a date or 'tried and dropped';" \
         "move the history to the area's LOG.md (CONTRIBUTING.md)" >&2
    exit 1
fi
echo "check_notebook: no dates or 'tried and dropped' in $dirs"
