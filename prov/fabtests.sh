#!/usr/bin/env bash
# prov/fabtests.sh - runs libfabric's fabtests (v1.17.0) against the mroce
# provider and its peers on this host, and prints a markdown table.
#
# Each case runs locally: a one-process unit test as is, a client/server
# test with the server in the background (-s 127.0.0.1 -B <port>) and the
# client with -P <port> 127.0.0.1, each under a timeout.  A case is
#   pass     every process exits 0
#   notrun   the provider refused the capability (the processes exit with
#            FI_ENODATA or FI_ENOSYS, as runfabtests.sh counts "Notrun")
#   timeout  a process ran past the limit (-t)
#   fail     anything else
# The case lists follow runfabtests.sh's unit, functional, short and
# standard sets, for RDM endpoints (the MSG/DGRAM cases are there to show
# which provider offers them), plus the -S all -v sweeps and the cases
# issue 16 names.
#
# Not part of ctest (a full run takes tens of minutes); CI cannot download
# fabtests, so without a fabtests build this prints how to make one and
# exits 0 ("skipped").
#
# Usage: prov/fabtests.sh [-b BIN] [-L PROVIDER_PATH] [-p PROV]... [-f]
#                         [-F FAULT] [-t SECONDS] [-P PORT] [-k REGEX]
#                         [-o DIR] [-r FILE] [-l]
#   -b BIN    fabtests bin directory ($FABTESTS_BIN, /work/fabtests-inst/bin)
#   -L PATH   FI_PROVIDER_PATH (default: the environment's, else build/prov)
#   -p PROV   a provider to run (repeatable; default: mroce, "udp;ofi_rxd",
#             "tcp;ofi_rxm")
#   -f        run with MROCE_FAULT=tx:drop=0.01 in both processes
#   -F SPEC   the same with another MROCE_FAULT spec
#   -t SEC    timeout per process (default 90)
#   -P PORT   first server port; cases use PORT..PORT+199 (default 47000)
#   -k REGEX  only the cases matching REGEX (grep -E)
#   -o DIR    keep each case's output in DIR (default: a temporary dir,
#             removed at the end unless a case did not pass)
#   -r FILE   also report the providers in FILE that this run does not run:
#             FILE holds the progress lines ("PROV RESULT CASE") an earlier
#             run printed on stderr (to rerun mroce alone after a change);
#             with -r and no -p, nothing runs: the report of FILE alone
#   -l        list the cases and exit
set -u

here=$(cd "$(dirname "$0")" && pwd)
BIN=${FABTESTS_BIN:-/work/fabtests-inst/bin}
PROVS=()
FAULT=""
TMO=90
PORT0=47000
FILTER=""
OUTDIR=""
LIST=0
REUSE=""
while getopts "b:L:p:fF:t:P:k:o:r:lh" opt; do
    case $opt in
    b) BIN=$OPTARG ;;
    L) export FI_PROVIDER_PATH=$OPTARG ;;
    p) PROVS+=("$OPTARG") ;;
    f) FAULT="tx:drop=0.01" ;;
    F) FAULT=$OPTARG ;;
    t) TMO=$OPTARG ;;
    P) PORT0=$OPTARG ;;
    k) FILTER=$OPTARG ;;
    o) OUTDIR=$OPTARG ;;
    r) REUSE=$OPTARG ;;
    l) LIST=1 ;;
    *) sed -n '2,/^set -u/p' "$0" | sed -e '$d' -e 's/^# \{0,1\}//'; exit 2 ;;
    esac
done
if [ ${#PROVS[@]} -eq 0 ] && [ -z "$REUSE" ]; then
    PROVS=(mroce "udp;ofi_rxd" "tcp;ofi_rxm")
fi
if [ -z "${FI_PROVIDER_PATH:-}" ]; then
    for d in "$here/../build/prov" "$PWD/build/prov" "$PWD/prov"; do
        if [ -f "$d/libmroce-fi.so" ]; then
            export FI_PROVIDER_PATH=$(cd "$d" && pwd)
            break
        fi
    done
fi

# The cases: "u|args" runs one process, "c|args" a server and a client.
CASES=(
    # unit (runfabtests.sh unit_tests)
    "u|fi_getinfo_test -s 127.0.0.1 127.0.0.1"
    "u|fi_av_test -g 127.0.0.1 -n 1 -s 127.0.0.1 -e rdm"
    "u|fi_av_test -g 127.0.0.1 -n 1 -s 127.0.0.1 -e dgram"
    "u|fi_dom_test -n 2"
    "u|fi_eq_test"
    "u|fi_cq_test"
    "u|fi_mr_test"
    "u|fi_cntr_test"
    # functional
    "c|fi_av_xfer -e rdm"
    "c|fi_cq_data -e rdm"
    "c|fi_cq_data -e msg"
    "c|fi_cq_data -e dgram"
    "c|fi_poll -t queue"
    "c|fi_poll -t counter"
    "c|fi_rdm"
    "c|fi_rdm -U"
    "c|fi_rdm_rma_event"
    "c|fi_rdm_rma_trigger"
    "c|fi_shared_ctx"
    "c|fi_shared_ctx --no-tx-shared-ctx"
    "c|fi_shared_ctx --no-rx-shared-ctx"
    "c|fi_rdm_tagged_peek"
    "c|fi_scalable_ep"
    "c|fi_rdm_shared_av"
    "c|fi_multi_mr -e rdm -V"
    "c|fi_multi_ep -e rdm -v"
    "c|fi_recv_cancel -e rdm -V"
    "c|fi_unexpected_msg -e rdm -I 10"
    "c|fi_msg_inject -A inject -v"
    "c|fi_msg_inject -N -A inject -v"
    "c|fi_msg_inject -A inj_complete -v"
    "c|fi_msg_inject -N -A inj_complete -v"
    "c|fi_bw -e rdm -v -T 1"
    "c|fi_bw -e rdm -v -T 1 -U"
    "c|fi_rdm_multi_client -C 10 -I 5"
    # short
    "c|fi_msg_pingpong -I 5"
    "c|fi_msg_bw -I 5"
    "c|fi_rma_bw -e rdm -o write -I 5"
    "c|fi_rma_bw -e rdm -o write -I 5 -U"
    "c|fi_rma_bw -e rdm -o read -I 5"
    "c|fi_rma_bw -e rdm -o read -I 5 -U"
    "c|fi_rma_bw -e rdm -o writedata -I 5"
    "c|fi_rma_bw -e rdm -o writedata -I 5 -U"
    "c|fi_rdm_atomic -I 5 -o all"
    "c|fi_rdm_atomic -I 5 -o all -U"
    "c|fi_rdm_cntr_pingpong -I 5"
    "c|fi_multi_recv -e rdm -I 5"
    "c|fi_rdm_pingpong -I 5"
    "c|fi_rdm_pingpong -I 5 -U"
    "c|fi_rdm_pingpong -I 5 -v"
    "c|fi_rdm_pingpong -I 5 -v -U"
    "c|fi_rdm_tagged_pingpong -I 5"
    "c|fi_rdm_tagged_pingpong -I 5 -U"
    "c|fi_rdm_tagged_pingpong -I 5 -v"
    "c|fi_rdm_tagged_pingpong -I 5 -v -U"
    "c|fi_rdm_tagged_bw -I 5"
    "c|fi_rdm_tagged_bw -I 5 -U"
    "c|fi_rdm_tagged_bw -I 5 -v"
    "c|fi_rdm_tagged_bw -I 5 -v -U"
    # standard
    "c|fi_rdm_pingpong"
    "c|fi_rdm_pingpong -v"
    "c|fi_rdm_pingpong -k"
    "c|fi_rdm_pingpong -k -v"
    "c|fi_rdm_tagged_pingpong"
    "c|fi_rdm_tagged_pingpong -v"
    "c|fi_rdm_tagged_bw"
    "c|fi_rdm_tagged_bw -v"
    "c|fi_rma_bw -e rdm -o write"
    "c|fi_rma_bw -e rdm -o read"
    "c|fi_rma_bw -e rdm -o writedata"
    "c|fi_rdm_atomic -o all -I 1000"
    "c|fi_rdm_cntr_pingpong"
    "c|fi_multi_recv -e rdm"
    # every size, data checked
    "c|fi_rdm_pingpong -S all -v -I 10"
    "c|fi_rdm_tagged_pingpong -S all -v -I 10"
    "c|fi_rdm_tagged_bw -S all -v -I 10"
    "c|fi_rma_bw -e rdm -o write -S all -v -I 10"
    "c|fi_rma_bw -e rdm -o read -S all -v -I 10"
    "c|fi_rma_bw -e rdm -o writedata -S all -v -I 10"
    "c|fi_rma_bw -e rdm -o write -I 5 -S 1024"
    "c|fi_rma_bw -e rdm -o writedata -I 5 -S 1024"
    "c|fi_rdm_atomic -o all -S all -I 5"
    # issue 16's large and unexpected-message cases
    "c|fi_rdm_tagged_bw -W 256 -S 8388608 -v -I 256"
    "c|fi_unexpected_msg -e rdm -M 1100 -I 3"
    "c|fi_unexpected_msg -e rdm -M 2000 -I 3"
)

if [ "$LIST" = 1 ]; then
    for c in "${CASES[@]}"; do
        [ -n "$FILTER" ] && ! echo "${c#*|}" | grep -Eq -- "$FILTER" && continue
        echo "${c#*|}"
    done
    exit 0
fi

if [ ! -x "$BIN/fi_getinfo_test" ]; then
    cat <<EOF
fabtests: skipped (no fabtests in $BIN; set FABTESTS_BIN or -b).
Build fabtests v1.17.0 (the libfabric version Debian ships) from
libfabric's source:
  git clone https://github.com/ofiwg/libfabric
  git -C libfabric archive --prefix=fabtests-1.17.0/ v1.17.0 fabtests | tar -x
  cd fabtests-1.17.0/fabtests
  ./autogen.sh && ./configure --with-libfabric=/usr --prefix=\$HOME/fabtests-inst
  make -j && make install
then run: FABTESTS_BIN=\$HOME/fabtests-inst/bin $0
EOF
    exit 0
fi

command -v timeout >/dev/null || { echo "fabtests: needs timeout(1)"; exit 1; }
# Absolute paths: the cases run in the output directory.
BIN=$(cd "$BIN" && pwd)
if [ -n "${FI_PROVIDER_PATH:-}" ] && [ -d "$FI_PROVIDER_PATH" ]; then
    FI_PROVIDER_PATH=$(cd "$FI_PROVIDER_PATH" && pwd)
fi
if [ -n "$REUSE" ]; then
    [ -r "$REUSE" ] || { echo "fabtests: cannot read $REUSE"; exit 1; }
    REUSE=$(cd "$(dirname "$REUSE")" && pwd)/$(basename "$REUSE")
fi
KEEP=1
if [ -z "$OUTDIR" ]; then
    OUTDIR=$(mktemp -d /tmp/fabtests.XXXXXX)
    KEEP=0
fi
mkdir -p "$OUTDIR"
OUTDIR=$(cd "$OUTDIR" && pwd)
# The cases run there: a crashing process leaves its backtrace file in
# the working directory.
cd "$OUTDIR" || exit 1
ENODATA=61
ENOSYS=38
ENV=(env)
[ -n "$FAULT" ] && ENV+=("MROCE_FAULT=$FAULT")

is_notrun() { [ "$1" = $ENODATA ] || [ "$1" = $ENOSYS ]; }
is_timeout() { [ "$1" = 124 ] || [ "$1" = 137 ]; }

# run_case INDEX PROV KIND ARGS -> prints pass|fail|notrun|timeout
run_case() {
    local i=$1 prov=$2 kind=$3 args=$4
    local port=$((PORT0 + (i % 100) * 2))
    local log="$OUTDIR/$(echo "$prov" | tr -c 'a-zA-Z0-9\n' _)-$i"
    local exe=${args%% *} rest=""
    [ "$exe" != "$args" ] && rest=${args#* }
    # These two keep a TCP control socket, on port 3000 unless told: give
    # each case its own (-E also sends the address over it).
    case $exe in
    fi_av_xfer|fi_unexpected_msg) rest="$rest -E=$((port + 1))" ;;
    esac
    # shellcheck disable=SC2086
    if [ "$kind" = u ]; then
        "${ENV[@]}" timeout -k 5 "$TMO" "$BIN/$exe" $rest -p "$prov" \
            >"$log.out" 2>&1 </dev/null
        local rc=$?
        if [ $rc = 0 ]; then echo pass
        elif is_timeout $rc; then echo timeout
        elif is_notrun $rc; then echo notrun
        else echo fail; fi
        return
    fi
    # shellcheck disable=SC2086
    "${ENV[@]}" timeout -k 5 "$TMO" "$BIN/$exe" $rest -p "$prov" \
        -s 127.0.0.1 -B "$port" >"$log.server" 2>&1 </dev/null &
    local spid=$!
    sleep 1
    # shellcheck disable=SC2086
    "${ENV[@]}" timeout -k 5 "$TMO" "$BIN/$exe" $rest -p "$prov" \
        -s 127.0.0.1 -P "$port" 127.0.0.1 >"$log.client" 2>&1 </dev/null
    local crc=$?
    if [ $crc != 0 ]; then
        # The server of a failed client may wait forever: give it 3 s.
        local n=0
        while kill -0 $spid 2>/dev/null && [ $n -lt 30 ]; do
            sleep 0.1; n=$((n + 1))
        done
        kill -0 $spid 2>/dev/null && kill -9 $spid 2>/dev/null
    fi
    wait $spid
    local src=$?
    echo "server $src client $crc" >"$log.rc"
    if [ $src = 0 ] && [ $crc = 0 ]; then echo pass
    elif is_timeout $crc || { is_timeout $src && [ $crc = 0 ]; }; then
        echo timeout
    elif is_notrun $crc && { is_notrun $src || [ $src = 137 ]; }; then
        echo notrun
    else echo fail; fi
}

declare -A RES
bad=0 # a case run now did not pass: its outputs are kept
SEL=()
OLD=()
for idx in "${!CASES[@]}"; do
    c=${CASES[$idx]}
    [ -n "$FILTER" ] && ! echo "${c#*|}" | grep -Eq -- "$FILTER" && continue
    SEL+=("$idx")
done

echo "fabtests: $BIN, FI_PROVIDER_PATH=${FI_PROVIDER_PATH:-}," \
     "MROCE_FAULT=${FAULT:-none}, ${#SEL[@]} cases, timeout ${TMO}s" >&2
for p in "${PROVS[@]:-}"; do
    [ -z "$p" ] && continue
    for idx in "${SEL[@]}"; do
        c=${CASES[$idx]}
        r=$(run_case "$idx" "$p" "${c%%|*}" "${c#*|}")
        RES["$p|$idx"]=$r
        case $r in fail|timeout) bad=1 ;; esac
        printf '%-14s %-8s %s\n' "$p" "$r" "${c#*|}" >&2
    done
done

# Earlier results of the providers not run now.
if [ -n "$REUSE" ]; then
    while read -r rp rr rc; do
        printf '%s\n' "${PROVS[@]:-}" | grep -qxF -- "$rp" && continue
        case $rr in pass|fail|notrun|timeout) ;; *) continue ;; esac
        for idx in "${SEL[@]}"; do
            c=${CASES[$idx]}
            [ "${c#*|}" = "$rc" ] && RES["$rp|$idx"]=$rr
        done
        printf '%s\n' "${OLD[@]:-}" | grep -qxF -- "$rp" || OLD+=("$rp")
    done <"$REUSE"
    PROVS+=("${OLD[@]}")
fi

# --- the report ---
echo
[ -n "$FAULT" ] && echo "With MROCE_FAULT=$FAULT in both processes."
[ -n "$FAULT" ] && echo
echo "| provider | pass | fail | notrun | timeout |"
echo "|---|---|---|---|---|"
for p in "${PROVS[@]}"; do
    np=0 nf=0 nn=0 nt=0
    for idx in "${SEL[@]}"; do
        case ${RES["$p|$idx"]:--} in
        pass) np=$((np + 1)) ;; fail) nf=$((nf + 1)) ;;
        notrun) nn=$((nn + 1)) ;; timeout) nt=$((nt + 1)) ;;
        esac
    done
    echo "| $p | $np | $nf | $nn | $nt |"
done
echo
hdr="| case |"; sep="|---|"
for p in "${PROVS[@]}"; do hdr="$hdr $p |"; sep="$sep---|"; done
echo "$hdr"; echo "$sep"
for idx in "${SEL[@]}"; do
    c=${CASES[$idx]}
    row="| \`${c#*|}\` |"
    for p in "${PROVS[@]}"; do row="$row ${RES["$p|$idx"]:--} |"; done
    echo "$row"
done
if printf '%s\n' "${PROVS[@]}" | grep -qx mroce; then
    echo
    echo "Cases where mroce does not pass but a peer does:"
    echo
    n=0
    for idx in "${SEL[@]}"; do
        c=${CASES[$idx]}
        [ "${RES["mroce|$idx"]:--}" = pass ] && continue
        who=""
        for p in "${PROVS[@]}"; do
            [ "$p" != mroce ] && [ "${RES["$p|$idx"]:--}" = pass ] && who="$who $p"
        done
        [ -z "$who" ] && continue
        echo "- \`${c#*|}\`: mroce ${RES["mroce|$idx"]:--}; passes on${who}"
        n=$((n + 1))
    done
    [ $n = 0 ] && echo "- none"
fi
if [ $KEEP = 0 ] && [ $bad = 0 ]; then
    rm -rf "$OUTDIR"
else
    echo >&2
    echo "outputs: $OUTDIR" >&2
fi
exit 0
