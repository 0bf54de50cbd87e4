# cm_env.sh - sourced by the rdmacm test scripts: how an unmodified
# rdmacm-utils program runs over this build's libibverbs and librdmacm.
# The script sets vdir (the verbs library's directory), cdir (librdmacm's)
# and port, and calls asan_env (verbs/tests/asan_env.sh) for MV_PRELOAD.
#
# cm_exec ADDR PROGRAM ARGS...: execs PROGRAM with one device, mroce0, on
#   ADDR, plus the assignments in CM_ENV (e.g. MROCE_CM_TIMEOUT_MS=500).
#   It replaces the shell it runs in, so `cm_exec ... &` leaves the
#   program itself as $! and `(cm_exec ...)` runs it as a child.
# cm_wait_listen: waits up to 5 s for a TCP listener on $port (the CM's).

cm_exec() {
    addr=$1
    shift
    # shellcheck disable=SC2086 # CM_ENV holds whole assignments
    exec env LD_LIBRARY_PATH="$vdir:$cdir" LD_PRELOAD="$MV_PRELOAD" \
        MROCE_IBV_DEVICES="mroce0=$addr" MROCE_IBV_PORT="$port" \
        ${CM_ENV:-} "$@"
}

cm_wait_listen() {
    i=0
    while [ $i -lt 50 ] && ! ss -ltn 2>/dev/null | grep -q ":$port "; do
        sleep 0.1
        i=$((i + 1))
    done
}
