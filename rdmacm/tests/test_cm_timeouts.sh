#!/bin/sh
# Unmodified rdmacm-utils clients against servers that are not there or
# stop answering fail cleanly (exit non-zero, no signal) instead of
# hanging, with the events rdma_cm reports:
#   - nobody listens on the port: REJECTED, status 8 (IB's invalid
#     service ID), at once (rping, ucmatose print it; rdma_client's
#     rdma_connect fails);
#   - the server's process is stopped (SIGSTOP: its kernel still accepts
#     the TCP connection, its CM never answers the REQ): UNREACHABLE,
#     status -110 (-ETIMEDOUT) after MROCE_CM_TIMEOUT_MS (500 here);
#   - the server is killed in the middle of a run (SIGKILL): the client
#     ends, having printed its pings so far.
# Each program runs under `timeout 20`: exit 124 is a hang.  Skips (77)
# without rdmacm-utils.
# usage: test_cm_timeouts.sh VERBSDIR CMDIR PORT
set -u
vdir=$1 cdir=$2 port=$3
command -v rping >/dev/null 2>&1 || { echo "SKIP: no rdmacm-utils"; exit 77; }
. "$(dirname "$0")/../../verbs/tests/asan_env.sh"
asan_env "$vdir"
tmp=$(mktemp -d)
spid=""
stop_server() {
    [ -n "$spid" ] || return 0
    kill -CONT "$spid" 2>/dev/null
    kill -KILL "$spid" 2>/dev/null
    wait "$spid" 2>/dev/null
    spid=""
}
trap 'stop_server; rm -rf "$tmp"' EXIT
. "$(dirname "$0")/cm_env.sh"
CM_ENV=MROCE_CM_TIMEOUT_MS=500
fail=0
# WANT-EXIT (nonzero or any) MESSAGE-REGEX (- for none) PROGRAM ARGS...
client() {
    want=$1 msg=$2
    shift 2
    (cm_exec 127.0.0.2 timeout 20 "$@") >"$tmp/out" 2>&1
    rc=$?
    sig=0
    # 129..159 is a signal, unless the program said it returns that
    # status (ucmatose exits with -110, which the shell sees as 146).
    if [ $rc -gt 128 ] && [ $rc -lt 160 ] &&
        ! grep -q "return status -$((256 - rc))\$" "$tmp/out"; then
        sig=1
    fi
    if [ $rc -eq 124 ] || [ $sig -eq 1 ] ||
        { [ "$want" = nonzero ] && [ $rc -eq 0 ]; }; then
        echo "FAIL: $* exited $rc (124: hung; >128: a signal)"
        cat "$tmp/out"
        fail=1
    elif [ "$msg" != - ] && ! grep -Eq "$msg" "$tmp/out"; then
        echo "FAIL: $*: no /$msg/ in:"
        cat "$tmp/out"
        fail=1
    else
        echo "ok: $* exits $rc: $(grep -E "${msg#-}" "$tmp/out" | tail -1)"
    fi
}

# Nobody listens.
client nonzero "REJECTED, error:? 8" rping -c -a 127.0.0.1 -p "$port" -C 3
client nonzero "REJECTED, error:? 8" ucmatose -s 127.0.0.1 -p "$port"
client nonzero "rdma_connect" rdma_client -s 127.0.0.1 -p "$port"

# A stopped server: the TCP connection opens, the REQ goes unanswered.
cm_exec 127.0.0.1 rping -s -a 127.0.0.1 -p "$port" >"$tmp/server" 2>&1 &
spid=$!
cm_wait_listen
kill -STOP "$spid"
client nonzero "UNREACHABLE, error:? -110" rping -c -a 127.0.0.1 -p "$port" -C 3
client nonzero "UNREACHABLE, error:? -110" ucmatose -s 127.0.0.1 -p "$port"
client nonzero "rdma_connect" rdma_client -s 127.0.0.1 -p "$port"
stop_server

# The server killed in the middle of a run of pings.
port=$((port + 1))
cm_exec 127.0.0.1 rping -s -a 127.0.0.1 -p "$port" >"$tmp/server" 2>&1 &
spid=$!
cm_wait_listen
(sleep 0.5 && kill -KILL "$spid") &
client any "ping data: rdma-ping-" rping -c -a 127.0.0.1 -p "$port" \
    -C 1000000 -v
wait
stop_server
[ $fail -eq 0 ] && echo PASS
exit $fail
