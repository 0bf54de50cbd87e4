#!/bin/sh
# run_faults.sh BUILD_DIR [FAULT...] - show that the conformance suite can
# fail: run mroce-conform against mroce-conform-agent-faults once per seeded
# fault (conform/README.md, "## Seeded faults") and require a failure each
# time, naming the cases that caught it.  A fault's run is the cases that
# cite a requirement it violates (the table's "Violates" column, passed to
# the tester as --filter): the cases that check a requirement must catch
# its violation.  A fault missed there, or without a row in the table, runs
# the whole suite, alone, and a catch on that run is reported as such.
#
# First a baseline run with no fault must pass (up to three attempts: a
# case that fails in any attempt is reported as flaky and never counts as
# catching a fault).  Exit 0 if every fault was
# caught, 1 if any went unnoticed (or the baseline failed), 2 on set-up
# errors.  Each agent runs on free loopback ports (it picks them itself and
# reports them on its READY line).
#
# Environment: MROCE_CONFORM (tester binary; default
# BUILD_DIR/conform/mroce-conform), MROCE_AGENT_FAULTS (agent binary),
# MROCE_CONFORM_ARGS (extra tester arguments, e.g. "--slow 2"),
# MROCE_FAULTS_TIMEOUT (seconds per suite run; 600), MROCE_FAULTS_JOBS
# (fault runs at a time, each with its own agent; 3: a suite run mostly
# waits out silence windows, so runs overlap well even on two cores),
# MROCE_FAULTS_KEEP=1 (keep the TAP and logs, in the directory printed at
# the end), MROCE_FAULTS_FULL=1 (every fault runs the whole suite).
set -u

if [ $# -lt 1 ]; then
    echo "usage: $0 BUILD_DIR [FAULT...]" >&2
    exit 2
fi
build=$1
shift
tester=${MROCE_CONFORM:-$build/conform/mroce-conform}
agent=${MROCE_AGENT_FAULTS:-$build/conform/mroce-conform-agent-faults}
extra=${MROCE_CONFORM_ARGS:-}
limit=${MROCE_FAULTS_TIMEOUT:-600}
jobs=${MROCE_FAULTS_JOBS:-3}
full=${MROCE_FAULTS_FULL:-0}
table=$(dirname "$0")/README.md
case $jobs in
'' | *[!0-9]* | 0) echo "run_faults: MROCE_FAULTS_JOBS must be a positive integer" >&2; exit 2 ;;
esac

for f in "$tester" "$agent"; do
    if [ ! -x "$f" ]; then
        echo "run_faults: $f not found or not executable" >&2
        exit 2
    fi
done

if [ $# -gt 0 ]; then
    faults=$*
else
    faults=$("$agent" --list-faults) || exit 2
fi
if [ -z "$faults" ]; then
    echo "run_faults: $agent lists no faults" >&2
    exit 2
fi

tmp=$(mktemp -d "${TMPDIR:-/tmp}/mroce-faults.XXXXXX") || exit 2
agent_pid=
cleanup() {
    if [ -n "$agent_pid" ]; then
        kill "$agent_pid" 2>/dev/null
        wait "$agent_pid" 2>/dev/null
    fi
    if [ "${MROCE_FAULTS_KEEP:-0}" != 1 ]; then
        rm -rf "$tmp"
    fi
}
trap cleanup EXIT
trap 'exit 2' INT TERM

have_timeout=0
command -v timeout >/dev/null 2>&1 && have_timeout=1

# start_agent NAME: starts the agent (fault NAME, or none if empty) and sets
# ctl and udp from its READY line.
start_agent() {
    ready=$tmp/$1.ready
    : > "$ready"
    if [ -n "$1" ] && [ "$1" != baseline ]; then
        "$agent" --control 127.0.0.1:0 --udp 127.0.0.1:0 --fault "$1" \
            > "$ready" 2> "$tmp/$1.agent.log" &
    else
        "$agent" --control 127.0.0.1:0 --udp 127.0.0.1:0 \
            > "$ready" 2> "$tmp/$1.agent.log" &
    fi
    agent_pid=$!
    i=0
    while [ $i -lt 200 ]; do
        if grep -q '^READY ' "$ready" 2>/dev/null; then
            line=$(grep '^READY ' "$ready")
            ctl=$(echo "$line" | sed -n 's/.*control=\([^ ]*\).*/\1/p')
            udp=$(echo "$line" | sed -n 's/.*udp=\([^ ]*\).*/\1/p')
            return 0
        fi
        if ! kill -0 "$agent_pid" 2>/dev/null; then
            break
        fi
        sleep 0.05
        i=$((i + 1))
    done
    echo "run_faults: agent for '$1' did not start:" >&2
    cat "$tmp/$1.agent.log" >&2
    return 1
}

agent_status=0
stop_agent() {
    kill "$agent_pid" 2>/dev/null
    wait "$agent_pid" 2>/dev/null
    agent_status=$?
    agent_pid=
}

# violates FAULT: the requirement IDs of FAULT's row in the README's table,
# comma-separated (empty without a row).
violates() {
    [ -f "$table" ] || return 0
    sed -n '/^## Seeded faults/,/^## /p' "$table" |
        awk -F'|' -v f="\`$1\`" '$2 ~ "^ *" f " *$" { print $3; exit }' |
        tr -d ' '
}

# run_suite NAME [FILTER]: one tester run against a fresh agent (only the
# cases FILTER selects, if given); TAP in NAME.tap.
run_suite() {
    start_agent "$1" || return 2
    name=$1
    shift
    if [ -n "${1:-}" ]; then
        set -- --filter "$1"
    else
        set --
    fi
    if [ $have_timeout = 1 ]; then
        # shellcheck disable=SC2086
        timeout "$limit" "$tester" --agent "$ctl" --udp "$udp" --tap $extra \
            "$@" > "$tmp/$name.tap" 2> "$tmp/$name.log"
    else
        # shellcheck disable=SC2086
        "$tester" --agent "$ctl" --udp "$udp" --tap $extra \
            "$@" > "$tmp/$name.tap" 2> "$tmp/$name.log"
    fi
    rc=$?
    stop_agent
    return $rc
}

# Names of the failed cases in a TAP file (TODO lines do not count).
failed_cases() {
    grep '^not ok' "$1" | grep -v '# *TODO' |
        sed -e 's/^not ok *[0-9]* *-* *//' -e 's/ *#.*$//'
}

flaky=
attempt=1
while :; do
    run_suite baseline
    base_rc=$?
    if [ $base_rc -eq 0 ] && [ "$agent_status" -ne 0 ]; then
        echo "run_faults: the agent exited $agent_status after the baseline run:"
        tail -n 20 "$tmp/baseline.agent.log" | sed 's/^/  agent: /'
        exit 1
    fi
    [ $base_rc -eq 0 ] && break
    echo "run_faults: baseline attempt $attempt failed (exit $base_rc):"
    failed_cases "$tmp/baseline.tap" | sed 's/^/  failed: /'
    flaky="$flaky $(failed_cases "$tmp/baseline.tap" | tr '\n' ' ')"
    if [ $attempt -ge 3 ]; then
        tail -n 5 "$tmp/baseline.log" | sed 's/^/  log: /'
        echo "run_faults: the suite does not pass without a fault"
        exit 1
    fi
    attempt=$((attempt + 1))
done
nbase=$(grep -c '^ok' "$tmp/baseline.tap")
echo "run_faults: baseline passes ($nbase cases)"
flaky=$(echo "$flaky" | tr ' ' '\n' | sed '/^$/d' | sort -u | tr '\n' ' ')
if [ -n "$flaky" ]; then
    echo "run_faults: flaky without a fault, never counted as a catch: $flaky"
fi

# Failed cases of a fault run, minus the flaky ones.
catching_cases() {
    for c in $(failed_cases "$1"); do
        case " $flaky " in
        *" $c "*) ;;
        *) printf '%s ' "$c" ;;
        esac
    done
}

# One fault run in a subshell of its own (its own agent and ports), of the
# cases FILTER selects (the whole suite if empty); its exit status and the
# agent's go to $tmp/FAULT.rc.
run_fault() { # FAULT [FILTER]
    trap 'if [ -n "$agent_pid" ]; then kill "$agent_pid" 2>/dev/null; fi' EXIT
    run_suite "$1" "${2:-}"
    echo "$? $agent_status" > "$tmp/$1.rc"
}

# Batches of $jobs runs; the results are read back in the list's order.
batch=0
pids=
for f in $faults; do
    sel=
    [ "$full" = 1 ] || sel=$(violates "$f")
    [ -n "$sel" ] || [ "$full" = 1 ] ||
        echo "run_faults: $f has no row in $table: it runs the whole suite"
    run_fault "$f" "$sel" &
    pids="$pids $!"
    batch=$((batch + 1))
    if [ $batch -ge "$jobs" ]; then
        # shellcheck disable=SC2086 # one word per pid
        wait $pids
        pids=
        batch=0
    fi
done
# shellcheck disable=SC2086 # one word per pid
[ -n "$pids" ] && wait $pids

# A fault no case caught runs the whole suite, alone: a timing-sensitive
# case skips (and so passes) when a loaded host stretches its waits, the
# batches above load the host three runs deep, and a case that catches it
# may cite another requirement than the table names.  A fault missed in
# both runs is a miss; one caught on its second run says so.
is_caught() { # FAULT: 0 if its run failed a case that is not flaky
    r=2
    [ -f "$tmp/$1.rc" ] && read -r r _ < "$tmp/$1.rc"
    [ "$r" -ne 0 ] && [ -n "$(catching_cases "$tmp/$1.tap")" ]
}
second=
for f in $faults; do
    is_caught "$f" && continue
    second="$second $f"
    (run_fault "$f")
done

caught=0
missed=0
missed_list=
for f in $faults; do
    rc=2
    agent_status=0
    if [ -f "$tmp/$f.rc" ]; then
        read -r rc agent_status < "$tmp/$f.rc"
    fi
    note=
    [ "$agent_status" -ne 0 ] && note=" (the agent exited $agent_status)"
    case " $second " in
    *" $f "*) note="$note (on its second run: the first caught nothing)" ;;
    esac
    cases=$(catching_cases "$tmp/$f.tap" | sed 's/ *$//')
    n=0
    [ -n "$cases" ] && n=$(echo "$cases" | wc -w)
    if [ "$rc" -ne 0 ] && [ "$n" -gt 0 ]; then
        caught=$((caught + 1))
        echo "fault $f: caught by $n case(s): $cases$note"
    else
        missed=$((missed + 1))
        missed_list="$missed_list $f"
        if [ "$rc" -ne 0 ]; then
            echo "fault $f: NOT CAUGHT (suite exited $rc without a failed case)$note"
            tail -n 3 "$tmp/$f.log" | sed 's/^/  log: /'
        else
            echo "fault $f: NOT CAUGHT (every case passed)$note"
        fi
    fi
done

total=$((caught + missed))
echo "run_faults: $caught of $total faults caught${missed_list:+; missed:$missed_list}"
if [ "${MROCE_FAULTS_KEEP:-0}" = 1 ]; then
    echo "run_faults: TAP and logs kept in $tmp"
fi
[ $missed -eq 0 ]
