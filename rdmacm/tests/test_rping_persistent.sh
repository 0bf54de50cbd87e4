#!/bin/sh
# Three rping clients one after another (devices on 127.0.0.2, .3, .4)
# against one persistent rping server (-P, a thread per connection;
# device on 127.0.0.1): connections come and go on one listener and event
# channel.  Not at once: Debian's rping (rdma-core 44) can hand one
# CONNECT_REQUEST's id to two server threads when requests arrive faster
# than it wakes (fixed upstream by rdma-core commit 6f8e0056e, "rping:
# wait for acknowledgement before processing subsequent CONNECT_REQUESTs");
# ucmatose -c 4 covers connections at once.  Passes when every
# client exits 0 having verified (-V) and printed its last ping, and the
# server is still running afterwards (it serves until killed).  Skips (77)
# without rping.
# usage: test_rping_persistent.sh VERBSDIR CMDIR PORT
set -u
vdir=$1 cdir=$2 port=$3
command -v rping >/dev/null 2>&1 || { echo "SKIP: no rping"; exit 77; }
. "$(dirname "$0")/../../verbs/tests/asan_env.sh"
asan_env "$vdir"
tmp=$(mktemp -d)
spid=""
cleanup() {
    [ -n "$spid" ] && kill "$spid" 2>/dev/null && wait "$spid"
    rm -rf "$tmp"
}
trap cleanup EXIT
. "$(dirname "$0")/cm_env.sh"
run() { # ADDR ARGS...
    addr=$1
    shift
    (cm_exec "$addr" timeout 60 rping "$@")
}
# $! is timeout itself, whom the kill at exit stops with its rping.
cm_exec 127.0.0.1 timeout 60 rping -s -P -a 127.0.0.1 -p "$port" -S 2000 \
    >"$tmp/server" 2>&1 &
spid=$!
cm_wait_listen
fail=0
for n in 2 3 4; do
    if ! run 127.0.0.$n -c -a 127.0.0.1 -p "$port" -S 2000 -C 100 -v -V \
        >"$tmp/client$n" 2>&1; then
        echo "FAIL: client on 127.0.0.$n exited non-zero:"
        cat "$tmp/client$n"
        fail=1
    elif ! grep -q "^ping data: rdma-ping-99: " "$tmp/client$n"; then
        echo "FAIL: client on 127.0.0.$n did not print its 100th ping"
        fail=1
    fi
done
if ! kill -0 "$spid" 2>/dev/null; then
    echo "FAIL: the server is gone:"
    cat "$tmp/server"
    fail=1
fi
[ $fail -eq 0 ] && echo "PASS: 3 clients in turn, 100 pings each"
exit $fail
