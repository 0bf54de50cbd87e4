# same_run.sh - sourced by partition_check.sh and mpi_check.sh: the one
# comparison of two mroce-sim runs that must be bit-identical.  The
# caller defines fail() and $out (a scratch directory).
#   same DIR_A TXT_A DIR_B TXT_B WHAT MIN_CSV
# DIR_*: the runs' output directories; TXT_*: their printed summary.
# Identical means: the summary lines (the "partition" line and the
# bracketed timing left out), and every CSV but the timing columns of
# summary.csv (29-32: wall_s, events_per_s, cpu_s, events_per_cpu_s);
# at least MIN_CSV files compared.
same() {
    grep -v '^partition ' "$2" | sed 's/\[.*//' > "$out/a"
    grep -v '^partition ' "$4" | sed 's/\[.*//' > "$out/b"
    [ -s "$out/a" ] || fail "$5: no summary line"
    cmp -s "$out/a" "$out/b" ||
        fail "$5: summary differs: $(cat "$out/a") vs $(cat "$out/b")"
    n=0
    for f in "$1"/*.csv; do
        b=$(basename "$f")
        [ -f "$3/$b" ] || fail "$5: no $b"
        if [ "$b" = summary.csv ]; then
            cut -d, -f1-28,33- "$f" > "$out/a"
            cut -d, -f1-28,33- "$3/$b" > "$out/b"
        else
            cp "$f" "$out/a"
            cp "$3/$b" "$out/b"
        fi
        cmp -s "$out/a" "$out/b" || fail "$5: $b differs"
        n=$((n + 1))
    done
    [ "$n" -ge "$6" ] || fail "$5: only $n CSV files"
}
