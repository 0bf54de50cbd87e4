#!/bin/sh
# The engine's stages meet only at named seams, and every internal function
# carries the prefix of the file that defines it (src/engine/engine_int.h
# draws the stages and their seams).
#
# Three rules, read from the sources of src/engine:
#   seams    a call from one of the modules in $layered to a function that
#            another of them defines must be listed in the allowed-calls
#            table below ("caller-module callee-function");
#   prefixes a non-static function defined in FILE (or a static inline one
#            in a header) must start with one of FILE's prefixes in the
#            prefix table below, unless include/mroce/engine.h declares it
#            (the public API names its functions after the object they act
#            on, not after the file);
#   headers  such a function of FILE.c is declared in FILE.h, the module's
#            private header, which documents it.
# Usage: check_engine_seams.sh [SOURCE_ROOT]
set -eu
root=${1:-$(cd "$(dirname "$0")/.." && pwd)}
eng=$root/src/engine
pub=$root/include/mroce/engine.h

# The stages and the modules below them.  Calls run one way: requester and
# completer call the transmit ring and the loss detector; the loss detector
# calls the transmit ring; nothing below calls up.  Stages call each other
# only through the seams listed here.
layered="requester completer responder loss txring"
allowed='
requester   mre_txr_push
requester   mre_txr_unpush
requester   mre_txr_enflight
requester   mre_txr_unflight
requester   mre_loss_arm_timer
completer   mre_txr_unflight
completer   mre_txr_advance_una
completer   mre_txr_sacked_word
completer   mre_loss_arm_timer
completer   mre_loss_on_path_ack
completer   mre_loss_probe_proves
completer   mre_loss_ooo_scan
completer   mre_loss_rto_verdict
completer   mre_resp_on_acked
loss        mre_txr_mark_lost
loss        mre_txr_reflight
'

# File -> the prefixes of its internal functions.
prefixes='
cc.c            mre_cc_
completer.c     mre_comp_
conntab.c       mre_conntab_
cq.c            mre_cq_
ep.c            mre_ep_
liveness.c      mre_live_
loss.c          mre_loss_
mr.c            mre_mr_
names.c         mre_names_
path.c          mre_path_ mre_pathset_
plane.c         mre_plane_
qp.c            mre_qp_
ratehint.c      mre_rh_
requester.c     mre_req_
responder.c     mre_resp_
rxwin.c         mre_rxwin_
sack.c          mre_sack_
secure.c        mre_sec_
stream.c        mre_stream_
seeded_dup.c    mre_seeded_dup
timers.c        mre_timer_
txring.c        mre_txr_
engine_int.h    mre_mem_
path.h          mre_path_ mre_pathset_
'

defs=$(mktemp)
trap 'rm -f "$defs"' EXIT

# Definitions: "FILE NAME static|extern", one per function defined at file
# scope.  A definition starts at column 0 with its name followed by "(" and
# reaches a "{" before any ";" (or is a one-line "f(...) { ... }").
for f in "$eng"/*.c "$eng"/*.h; do
  awk -v file="$(basename "$f")" '
    function flush(isdef) { if (cand != "" && isdef) print file, cand, st
                            cand = "" }
    /^#/ { next }
    cand != "" { if ($0 ~ /^\{/ || $0 ~ /\)[ \t]*\{[ \t]*$/) flush(1)
                 else if ($0 ~ /;/) flush(0)
                 next }
    /^[A-Za-z]/ && match($0, /mre_[a-z0-9_]+\(/) {
      cand = substr($0, RSTART, RLENGTH - 1)
      st = ($0 ~ /^static/) ? "static" : "extern"
      if ($0 ~ /\)[ \t]*\{[ \t]*$/ || $0 ~ /\)[ \t]*\{.*\}[ \t]*$/) flush(1)
      else if ($0 ~ /;[ \t]*$/) flush(0)
    }' "$f"
done > "$defs"

bad=0
fail() { echo "engine_seams: $*"; bad=1; }

# Rule 1: seams.  Calls are found in code with comments removed.
for caller in $layered; do
  src=$eng/$caller.c
  [ -f "$src" ] || continue
  calls=$(awk '
    { line = $0
      if (inc) { if (sub(/.*\*\//, "", line)) inc = 0; else next }
      gsub(/\/\*([^*]|\*+[^*\/])*\*+\//, "", line)
      if (sub(/\/\*.*/, "", line)) inc = 1
      sub(/\/\/.*/, "", line)
      while (match(line, /mre_[a-z0-9_]+[ \t]*\(/)) {
        s = substr(line, RSTART, RLENGTH); sub(/[ \t]*\($/, "", s); print s
        line = substr(line, RSTART + RLENGTH)
      } }' "$src" | sort -u)
  for fn in $calls; do
    callee=$(awk -v fn="$fn" '$2 == fn && $3 == "extern" { print $1; exit }' "$defs")
    callee=${callee%.c}
    [ -n "$callee" ] && [ "$callee" != "$caller" ] || continue
    case " $layered " in *" $callee "*) ;; *) continue ;; esac
    if ! printf '%s\n' "$allowed" | awk -v c="$caller" -v f="$fn" \
        '$1 == c && $2 == f { ok = 1 } END { exit !ok }'; then
      fail "$caller.c calls $fn ($callee.c) outside the seams"
    fi
  done
done

# Rule 2: prefixes.
while read -r file fn st; do
  case $file in
    *.c) [ "$st" = extern ] || continue ;;
    *.h) [ "$st" = static ] || continue ;;
  esac
  if grep -Eq "[^a-z0-9_]$fn[ \t]*\(" "$pub"; then continue; fi
  ok=0
  for p in $(printf '%s\n' "$prefixes" | awk -v f="$file" '$1 == f { for (i = 2; i <= NF; i++) print $i }'); do
    case $fn in "$p"*) ok=1 ;; esac
  done
  [ $ok -eq 1 ] || fail "$fn is defined in $file but does not carry its prefix"
done < "$defs"

# Rule 3: every internal function is declared (and documented) in its own
# module's private header, FILE.c -> FILE.h.
while read -r file fn st; do
  case $file in *.c) [ "$st" = extern ] || continue ;; *) continue ;; esac
  if grep -Eq "[^a-z0-9_]$fn[ \t]*\(" "$pub"; then continue; fi
  hdr=$eng/${file%.c}.h
  if [ ! -f "$hdr" ] || ! grep -Eq "[^a-z0-9_]$fn[ \t]*\(" "$hdr"; then
    fail "$fn ($file) is not declared in its private header ${file%.c}.h"
  fi
done < "$defs"

# Every module named in the tables exists (a renamed file would otherwise
# turn its rules off silently).
for m in $layered; do
  [ -f "$eng/$m.c" ] || fail "src/engine/$m.c (in the seam table) is missing"
done

if [ $bad -ne 0 ]; then
  echo "engine_seams: 0 passed, 1 failed"
  exit 1
fi
echo "engine_seams: 1 passed, 0 failed"
