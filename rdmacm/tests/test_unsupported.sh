#!/bin/sh
# What this librdmacm does not provide fails cleanly: udaddy (UD) and
# mckey (multicast) get EOPNOTSUPP from rdma_create_id with a message
# naming RDMA_PS_TCP, rstream and riostream (rsockets) get it from
# rsocket(); each exits non-zero, neither killed by a signal nor hung.
# Skips (77) without rdmacm-utils.
# usage: test_unsupported.sh VERBSDIR CMDIR
set -u
vdir=$1 cdir=$2
command -v udaddy >/dev/null 2>&1 || { echo "SKIP: no rdmacm-utils"; exit 77; }
. "$(dirname "$0")/../../verbs/tests/asan_env.sh"
asan_env "$vdir"
fail=0
check() { # MESSAGE-REGEX PROGRAM ARGS...
    want=$1
    shift
    out=$(env LD_LIBRARY_PATH="$vdir:$cdir" LD_PRELOAD="$MV_PRELOAD" \
        MROCE_IBV_DEVICES=mroce0=127.0.0.1 MROCE_IBV_PORT=5390 \
        timeout 20 "$@" 2>&1)
    rc=$?
    # 124: timed out; 129..159: killed by a signal (a crash)
    if [ $rc -eq 0 ] || [ $rc -eq 124 ] || { [ $rc -gt 128 ] && [ $rc -lt 160 ]; }; then
        echo "FAIL: $* exited $rc (want a clean failure)"
        fail=1
    elif ! echo "$out" | grep -Eq "$want"; then
        echo "FAIL: $*: no /$want/ in:"
        echo "$out"
        fail=1
    else
        echo "ok: $* exits $rc: $(echo "$out" | grep -E "$want" | head -1)"
    fi
}
check "only RDMA_PS_TCP" udaddy -s 127.0.0.1
check "only RDMA_PS_TCP" udaddy
check "only RDMA_PS_TCP" mckey -m 239.1.1.1
check "rsockets is not supported" rstream -s 127.0.0.1 -p 5393
check "rsockets is not supported" riostream -s 127.0.0.1 -p 5394
[ $fail -eq 0 ] && echo PASS
exit $fail
