#!/bin/sh
# Runs an unmodified verbs program as server and client over libibverbs.so.1
# from this build (LIBDIR): the server's device mroce0 on 127.0.0.1, the
# client's on 127.0.0.2 (both loopback), both receiving on UDP port PORT,
# out-of-band exchange on TCP port PORT too.  FAULT ("-" for none) is
# MROCE_FAULT in both processes; "server:SPEC" gives SPEC to the server
# only.  Passes when both exit 0 and the client's
# output has a line matching EXPECT (an extended regex).  Exit 77 (skip)
# when the program is not installed.
# usage: run_pair.sh LIBDIR PORT FAULT EXPECT PROGRAM [ARGS...]
set -u
libdir=$1 port=$2 fault=$3 expect=$4 prog=$5
shift 5
if ! command -v "$prog" >/dev/null 2>&1; then
    echo "SKIP: $prog is not installed (Debian: perftest / ibverbs-utils)"
    exit 77
fi
. "$(dirname "$0")/asan_env.sh"
asan_env "$libdir"
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
fs="" fc=""
case "$fault" in
-) ;;
server:*) fs="MROCE_FAULT=${fault#server:}" ;;
*) fs="MROCE_FAULT=$fault" fc="$fs" ;;
esac
run() { # ADDR FAULT-ENV ARGS...
    addr=$1 f=$2
    shift 2
    env LD_LIBRARY_PATH="$libdir" LD_PRELOAD="$MV_PRELOAD" \
        MROCE_IBV_DEVICES="mroce0=$addr" \
        MROCE_IBV_PORT="$port" $f timeout 100 stdbuf -oL "$prog" "$@"
}
run 127.0.0.1 "$fs" "$@" -p "$port" >"$tmp/server" 2>&1 &
spid=$!
# The server listens on TCP before the client may connect.
i=0
while [ $i -lt 50 ] && ! grep -q "Waiting\|^  local address" "$tmp/server" 2>/dev/null; do
    ss -ltn 2>/dev/null | grep -q ":$port " && break
    sleep 0.1
    i=$((i + 1))
done
run 127.0.0.2 "$fc" "$@" -p "$port" 127.0.0.1 >"$tmp/client" 2>&1
crc=$?
wait $spid
src=$?
echo "--- server ($prog $*), exit $src"
cat "$tmp/server"
echo "--- client, exit $crc"
cat "$tmp/client"
[ "$src" -eq 0 ] || { echo "FAIL: server exit $src"; exit 1; }
[ "$crc" -eq 0 ] || { echo "FAIL: client exit $crc"; exit 1; }
grep -Eq "$expect" "$tmp/client" || { echo "FAIL: no line matching /$expect/"; exit 1; }
echo "PASS"
