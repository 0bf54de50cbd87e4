#!/bin/sh
# prov_interop: two processes (test_prov_interop) over the mroce provider
# on 127.0.0.1, each sending one tagged message to the other, for every
# pairing of FI_MROCE_SHARED_CONN (1: shared connections, protocol version
# 2; 0: a QP per endpoint pair, version 1).  Same setting: both messages
# arrive.  Different settings (CONN-38): on both sides the send completes
# with an error within seconds (not silence until a timeout) and the
# provider's warning names FI_MROCE_SHARED_CONN.
# $1: the test_prov_interop binary; $2: directory of libmroce-fi.so;
# $3: sanitizer runtimes to preload, or empty.
bin=$1
export FI_PROVIDER_PATH="$2" FI_MROCE_IFACE=127.0.0.1 FI_LOG_LEVEL=warn
[ -n "${3:-}" ] && export LD_PRELOAD="$3" ASAN_OPTIONS=detect_leaks=0
dir=$(mktemp -d)
trap 'rm -rf "$dir"' EXIT
fail=0
# pair A B EXPECT: side a with FI_MROCE_SHARED_CONN=A, b with B
pair() {
    rm -f "$dir"/*
    FI_MROCE_SHARED_CONN=$1 timeout 30 "$bin" a b "$dir" "$3" \
        > "$dir/a.out" 2> "$dir/a.err" &
    pa=$!
    FI_MROCE_SHARED_CONN=$2 timeout 30 "$bin" b a "$dir" "$3" \
        > "$dir/b.out" 2> "$dir/b.err"
    rb=$?
    wait $pa
    ra=$?
    echo "SHARED_CONN a=$1 b=$2 ($3): $(cat "$dir/a.out"); $(cat "$dir/b.out")"
    for s in a b; do
        r=$ra
        [ $s = b ] && r=$rb
        ok=1
        [ "$r" = 0 ] || ok=0
        if [ "$3" = fail ] &&
           ! grep -q "both sides must use the same setting" "$dir/$s.err"; then
            echo "  side $s: no warning naming the setting" >&2
            ok=0
        fi
        if [ $ok = 0 ]; then
            echo "  side $s failed (exit $r):" >&2
            grep -v "fi_getinfo\|OFI_MRAIL" "$dir/$s.err" | tail -20 >&2
            fail=1
        fi
    done
}
pair 1 1 ok
pair 0 0 ok
pair 1 0 fail
pair 0 1 fail
exit $fail
