#!/bin/sh
# Runs an unmodified rdma_cm program as server and client over this
# build's librdmacm.so.1 and libibverbs.so.1 (VERBSDIR, CMDIR): the
# server's device mroce0 on 127.0.0.1, the client's on 127.0.0.2 (both
# loopback), both receiving MetaRoCE on UDP port PORT, the CM exchange on
# TCP port PORT too (the rdma_cm port the programs are given).  FAULT ("-"
# for none) is MROCE_FAULT in both processes.  SERVER and CLIENT are the
# two argument lists (one word each, split on spaces; "@PORT@" stands for
# PORT).  Passes when both exit 0 and the client's output has a line
# matching EXPECT (an extended regex).  PROGRAM is one program, or
# "SERVERPROG,CLIENTPROG".  Exit 77 (skip) when a program is not installed.
# usage: run_cm_pair.sh VERBSDIR CMDIR PORT FAULT EXPECT PROGRAM SERVER CLIENT
set -u
vdir=$1 cdir=$2 port=$3 fault=$4 expect=$5
sprog=${6%%,*} cprog=${6#*,}
sargs=$(echo "$7" | sed "s/@PORT@/$port/g")
cargs=$(echo "$8" | sed "s/@PORT@/$port/g")
for p in "$sprog" "$cprog"; do
    if ! command -v "$p" >/dev/null 2>&1; then
        echo "SKIP: $p is not installed (Debian: rdmacm-utils)"
        exit 77
    fi
done
. "$(dirname "$0")/../../verbs/tests/asan_env.sh"
asan_env "$vdir"
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
f=""
[ "$fault" = "-" ] || f="MROCE_FAULT=$fault"
run() { # ADDR PROGRAM ARGS...
    addr=$1 prog=$2
    shift 2
    # shellcheck disable=SC2086
    env LD_LIBRARY_PATH="$vdir:$cdir" LD_PRELOAD="$MV_PRELOAD" \
        MROCE_IBV_DEVICES="mroce0=$addr" MROCE_IBV_PORT="$port" $f \
        timeout 60 stdbuf -oL "$prog" "$@"
}
# shellcheck disable=SC2086
run 127.0.0.1 "$sprog" $sargs >"$tmp/server" 2>&1 &
spid=$!
i=0
while [ $i -lt 50 ] && ! ss -ltn 2>/dev/null | grep -q ":$port "; do
    sleep 0.1
    i=$((i + 1))
done
# shellcheck disable=SC2086
run 127.0.0.2 "$cprog" $cargs >"$tmp/client" 2>&1
crc=$?
wait $spid
src=$?
echo "--- server ($sprog $sargs), exit $src"
cat "$tmp/server"
echo "--- client ($cprog $cargs), exit $crc"
cat "$tmp/client"
[ "$src" -eq 0 ] || { echo "FAIL: server exit $src"; exit 1; }
[ "$crc" -eq 0 ] || { echo "FAIL: client exit $crc"; exit 1; }
grep -Eq "$expect" "$tmp/client" || { echo "FAIL: no line matching /$expect/"; exit 1; }
echo "PASS"
