#!/bin/sh
# test_perf_secure.sh - secure mode end to end with two mroce-perf
# processes on loopback (docs/spec/security.md section 6):
#
#  ok:        write_bw and send_lat with --encrypt on both sides and the
#             same MROCE_KEY_FILE, --verify: exit 0, no mismatch; again
#             with --encrypt=gmac and with MROCE_KEY instead of a file;
#             write_bw with --rekey (master key rotation mid-run): both
#             sides move, their receive sides follow, nothing dropped;
#  mismatch:  the client with another key, with another suite, or in clear
#             (no --encrypt): it must fail to connect (SEC-27, CONN-32,
#             CONN-33), never run in clear;
#  refused:   a key file readable by others, or too short, fails the
#             device open (SEC-12).
#
# With "memif" as second argument, a shorter set over libmroce's DPDK
# datapath (a net_memif pair per run, shared memory, no hugepages):
# write_bw under 1% loss and send_lat with AES-128-GCM, verified, and
# another key refused.
#
# Usage: tests/test_perf_secure.sh MROCE_PERF_BINARY [memif]
set -u
bin=${1:?usage: test_perf_secure.sh mroce-perf [memif]}
mode=${2:-socket}
tmp=$(mktemp -d "${TMPDIR:-/tmp}/mroce_psec.XXXXXX")
srv=
cleanup() {
  [ -n "$srv" ] && kill -KILL "$srv" 2>/dev/null
  rm -rf "$tmp"
}
trap cleanup EXIT INT TERM
umask 077
key() { head -c 32 /dev/urandom | od -An -tx1 | tr -d ' \n' >"$1"; }
key "$tmp/k1"
key "$tmp/k2"
port=$((32000 + ($$ % 8000) * 2))
fail=0
pass=0

# run NAME EXPECT(0|fail) SERVER_ENV CLIENT_ENV TEST [options for both] --
# [client-only options]
run() {
  name=$1 want=$2 senv=$3 cenv=$4 test=$5
  shift 5
  port=$((port + 2))
  sa= ca=127.0.0.1
  if [ "$mode" = memif ]; then
    sock=$tmp/memif-$port.sock
    senv="$senv MROCE_DATAPATH=dpdk MROCE_DPDK_VDEV=net_memif,role=server,socket=$sock"
    cenv="$cenv MROCE_DATAPATH=dpdk MROCE_DPDK_VDEV=net_memif,role=client,socket=$sock"
    sa="-B 10.0.0.1" ca="10.0.0.1 -B 10.0.0.2"
  fi
  # shellcheck disable=SC2086 # the env and address lists split on purpose
  env $senv "$bin" "$test" -p "$port" $sa --timeout 4 "$@" >"$tmp/s.out" 2>&1 &
  srv=$!
  if [ "$mode" = memif ]; then
    # the memif socket is abstract: listed in /proc/net/unix, not a file
    i=0
    while ! grep -q "@$sock\$" /proc/net/unix && [ $i -lt 100 ]; do
      sleep 0.05
      i=$((i + 1))
    done
  else
    sleep 0.3
  fi
  # shellcheck disable=SC2086
  env $cenv "$bin" "$test" $ca -p "$port" --timeout 3 -n 200 \
    --verify "$@" >"$tmp/c.out" 2>&1
  rc=$?
  wait "$srv" 2>/dev/null
  srv=
  if { [ "$want" = 0 ] && [ $rc -eq 0 ]; } ||
     { [ "$want" = fail ] && [ $rc -ne 0 ]; }; then
    pass=$((pass + 1))
  else
    echo "FAIL $name: client exit $rc, wanted $want"
    tail -3 "$tmp/c.out" | sed 's/^/    /'
    fail=$((fail + 1))
  fi
}

K1="MROCE_KEY_FILE=$tmp/k1"
K2="MROCE_KEY_FILE=$tmp/k2"
if [ "$mode" = memif ]; then
  run memif_gcm_bw_loss 0 "$K1" "$K1" write_bw -s 65536 --encrypt \
    --fault tx:drop=0.01
  run memif_gcm_lat 0 "$K1" "$K1" send_lat -s 64 --encrypt
  run memif_other_key fail "$K1" "$K2" write_bw -s 4096 --encrypt
  echo "test_perf_secure memif: $pass passed, $fail failed"
  [ $fail -eq 0 ]
  exit
fi
# Rotation under traffic (SEC-32): both sides add key 3 as generation 1
# and move to it mid-run; every byte verified, both receive sides move.
key "$tmp/k4"
run gcm_bw_rekey 0 "$K1" "$K1" write_bw -s 65536 -n 1000 --encrypt \
  --rekey "$tmp/k4"
for f in s c; do
  if grep -q "rekey *: sending under generation 1, [1-9][0-9]* receive sides moved to a new key, 0 drop_auth, 0 drop_key" "$tmp/$f.out"; then
    pass=$((pass + 1))
  else
    echo "FAIL gcm_bw_rekey: side $f did not rotate cleanly"
    grep rekey "$tmp/$f.out" | sed 's/^/    /'
    fail=$((fail + 1))
  fi
done
run gcm_lat 0 "$K1" "$K1" send_lat -s 64 --encrypt
run gmac_bw 0 "$K1" "$K1" write_bw -s 65536 --encrypt=gmac
run env_key 0 "MROCE_KEY=$(cat "$tmp/k1")" "MROCE_KEY=$(cat "$tmp/k1")" \
  write_bw -s 4096 --encrypt
run other_key fail "$K1" "$K2" write_bw -s 4096 --encrypt
# Another suite, and a clear client against a secure server: the server
# side gets the options of the client here, so run them by hand.
port=$((port + 2))
env "$K1" "$bin" write_bw -p "$port" --timeout 4 --encrypt >"$tmp/s.out" 2>&1 &
srv=$!
sleep 0.3
if env "$K1" "$bin" write_bw 127.0.0.1 -p "$port" --timeout 3 -n 50 \
    --encrypt=aes256gcm >"$tmp/c.out" 2>&1; then
  echo "FAIL other_suite: connected"; fail=$((fail + 1))
else
  pass=$((pass + 1))
fi
wait "$srv" 2>/dev/null
port=$((port + 2))
env "$K1" "$bin" write_bw -p "$port" --timeout 4 --encrypt >"$tmp/s.out" 2>&1 &
srv=$!
sleep 0.3
if env "$K1" "$bin" write_bw 127.0.0.1 -p "$port" --timeout 3 -n 50 \
    >"$tmp/c.out" 2>&1; then
  echo "FAIL clear_client: connected"; fail=$((fail + 1))
else
  pass=$((pass + 1))
fi
wait "$srv" 2>/dev/null
srv=

# Key files libmroce must refuse.
chmod 644 "$tmp/k2"
if MROCE_KEY_FILE=$tmp/k2 "$bin" write_bw -p "$((port + 2))" --timeout 1 \
    --encrypt >"$tmp/r.out" 2>&1; then
  echo "FAIL key_mode: a key file readable by others was used"; fail=$((fail + 1))
elif grep -q "readable by others" "$tmp/r.out"; then
  pass=$((pass + 1))
else
  echo "FAIL key_mode: no reason given"; cat "$tmp/r.out"; fail=$((fail + 1))
fi
printf 'abcd\n' >"$tmp/k3"
if MROCE_KEY_FILE=$tmp/k3 "$bin" write_bw -p "$((port + 4))" --timeout 1 \
    --encrypt >"$tmp/r.out" 2>&1; then
  echo "FAIL key_short: a 2-byte key was used"; fail=$((fail + 1))
else
  pass=$((pass + 1))
fi

echo "test_perf_secure: $pass passed, $fail failed"
[ $fail -eq 0 ]
