#!/bin/sh
# check_ids.sh MROCE_CONFORM SPEC_README - every case of the conformance
# suite cites at least one requirement, every cited ID (PREFIX-n) is a row
# of the requirement table in docs/spec/README.md, case names are unique
# and every case has a description.
set -eu
bin=$1
readme=$2
list=$("$bin" --list)
[ -n "$list" ] || { echo "no cases registered"; exit 1; }
bad=0
dups=$(printf '%s\n' "$list" | cut -f1 | sort | uniq -d)
if [ -n "$dups" ]; then
    echo "duplicate case names: $dups"
    bad=1
fi
tab=$(printf '\t')
while IFS="$tab" read -r name reqs desc; do
    if [ -z "$reqs" ]; then
        echo "$name: cites no requirement"
        bad=1
    fi
    if [ -z "$desc" ]; then
        echo "$name: has no description"
        bad=1
    fi
    for r in $reqs; do
        if ! grep -q "^| $r  *|" "$readme"; then
            echo "$name: cites $r, which is not in $readme"
            bad=1
        fi
    done
done <<EOT
$list
EOT
n=$(printf '%s\n' "$list" | wc -l)
[ $bad -eq 0 ] && echo "$n cases, every cited requirement exists"
exit $bad
