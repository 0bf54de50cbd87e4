#!/bin/sh
# check_ids.sh MROCE_CONFORM SPEC_README - every case of the conformance
# suite cites at least one requirement, every cited ID (PREFIX-n) is a row
# of the requirement table in docs/spec/README.md, case names are unique
# and every case has a description.  The table's IDs are unique and the
# README's "There are N requirements" line gives the number of its rows.
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
ids=$(grep -o '^| [A-Z][A-Z]*-[0-9][0-9a-z]* ' "$readme" | cut -c3- | tr -d ' ')
iddups=$(printf '%s\n' "$ids" | sort | uniq -d)
if [ -n "$iddups" ]; then
    echo "requirement IDs listed twice in $readme: $iddups"
    bad=1
fi
rows=$(printf '%s\n' "$ids" | wc -l)
said=$(sed -n 's/^There are \([0-9][0-9]*\) requirements.*/\1/p' "$readme")
if [ "$said" != "$rows" ]; then
    echo "$readme says there are ${said:-no count of} requirements; its table has $rows rows"
    bad=1
fi
n=$(printf '%s\n' "$list" | wc -l)
[ $bad -eq 0 ] && echo "$n cases, every cited requirement exists"
exit $bad
