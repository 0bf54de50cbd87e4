#!/bin/sh
# test_dissector.sh - checks dissector/mroce.lua against the wire vectors.
#
# Every vector of tests/vectors/wire_vectors.txt becomes one Ethernet/IPv4/UDP
# frame (127.0.0.1:49152 -> 127.0.0.2:4794) in a pcap written by text2pcap;
# tshark runs the dissector over it and prints the MetaRoCE fields, and awk
# compares them with the vector:
#   - valid vectors: every listed field decodes to the expected value (flags
#     also bit by bit through the mroce.flags.* booleans, opcode and NAK code
#     through their names in include/mroce/wire.h, SACK words in order, and
#     the computed SACKed PSN list against the bitmap), the CRC status is
#     Good, there is no mroce.error and no expert info of severity Error;
#   - invalid vectors: mroce.error names the expected decode error and the
#     matching expert info is present (bad CRC: mroce.crc.status Bad).
# Further cases: the name/value tables of the dissector against wire.h, the
# heuristic (valid vectors on a port the dissector is not registered on are
# claimed, vectors with a wrong version, opcode, flags or length are not),
# the mroce.udp_port preference, and coalesced (GSO/GRO) datagrams.
#
# Usage: dissector/test_dissector.sh [wire_vectors.txt]
# Prints one line per failure and "test_dissector: N passed, M failed";
# exits 1 on any failure.  Without tshark/text2pcap it prints a message and
# exits with $MROCE_SKIP_CODE (default 0; CTest sets 77 = skipped).
set -u

here=$(cd "$(dirname "$0")" && pwd)
root=$(dirname "$here")
vectors=${1:-$root/tests/vectors/wire_vectors.txt}
lua=$here/mroce.lua
wire_h=$root/include/mroce/wire.h
skip=${MROCE_SKIP_CODE:-0}

for tool in tshark text2pcap; do
  if ! command -v "$tool" >/dev/null 2>&1; then
    echo "test_dissector: SKIP: $tool not found (apt-get install tshark)"
    exit "$skip"
  fi
done
for f in "$vectors" "$lua" "$wire_h"; do
  if [ ! -r "$f" ]; then
    echo "test_dissector: cannot read $f"
    exit 1
  fi
done

tmp=$(mktemp -d "${TMPDIR:-/tmp}/mroce_dissector.XXXXXX")
trap 'rm -rf "$tmp"' EXIT INT TERM

# tshark as root prints a warning on stderr; keep stderr for real errors.
ts() {
  tshark -X lua_script:"$lua" "$@" 2>"$tmp/tshark.err"
  rc=$?
  grep -v '^Running as user' "$tmp/tshark.err" >&2
  return $rc
}

# ---------------------------------------------------------------------------
# 1. Tables from wire.h: opcodes, NAK codes, decode errors, flags.
# ---------------------------------------------------------------------------
awk '
  /^#define MROCE_OPCODES\(/     { sect = "op" }
  /^#define MROCE_NAK_CODES\(/   { sect = "nak" }
  /^#define MROCE_WIRE_ERRORS\(/ { sect = "err" }
  sect != "" && match($0, /X\([A-Z_]+, *-?(0x)?[0-9a-fA-F]+/) {
    s = substr($0, RSTART + 2, RLENGTH - 2)
    split(s, p, /, */)
    print sect "\t" p[1] "\t" p[2]
  }
  sect != "" && $0 !~ /\\$/ { sect = "" }
  /MROCE_F_[A-Z_]+ = 0x/ {
    match($0, /MROCE_F_[A-Z_]+/); n = substr($0, RSTART + 8, RLENGTH - 8)
    match($0, /0x[0-9a-fA-F]+/);  v = substr($0, RSTART, RLENGTH)
    print "flag\t" n "\t" v
  }
' "$wire_h" >"$tmp/wire.tab"

# ---------------------------------------------------------------------------
# 2. Frames.  gen.awk turns vectors into text2pcap input (one frame per
#    vector, or several vectors in one datagram for the coalesced cases).
# ---------------------------------------------------------------------------
cat >"$tmp/gen.awk" <<'EOF'
function hexv(s,   i, v) {
  v = 0; s = tolower(s)
  for (i = 1; i <= length(s); i++) v = v * 16 + index("0123456789abcdef", substr(s, i, 1)) - 1
  return v
}
function pair(v) { return sprintf("%02x %02x", int(v / 256) % 256, v % 256) }
# Writes one Ethernet/IPv4/UDP frame carrying the bytes of h (hex, spaced).
function frame(h, sport, dport,   n, b, ip, ib, m, i, sum, all, ab, k, line) {
  n = (h == "") ? 0 : split(h, b, " ")
  ip = "45 00 " pair(20 + 8 + n) " 00 01 40 00 40 11 00 00 7f 00 00 01 7f 00 00 02"
  m = split(ip, ib, " "); sum = 0
  for (i = 1; i <= m; i += 2) sum += hexv(ib[i]) * 256 + hexv(ib[i + 1])
  while (sum > 65535) sum = int(sum / 65536) + sum % 65536
  sub(/40 11 00 00/, "40 11 " pair(65535 - sum), ip)
  all = "00 00 00 00 00 02 00 00 00 00 00 01 08 00 " ip " " pair(sport) " " pair(dport) \
        " " pair(8 + n) " 00 00" (n ? " " h : "")
  k = split(all, ab, " "); line = ""
  for (i = 1; i <= k; i++) {
    if ((i - 1) % 16 == 0) { if (line != "") print line >OUT; line = sprintf("%06x ", i - 1) }
    line = line " " ab[i]
  }
  print line >OUT
  print "" >OUT
}
function done_vector() {
  if (name == "") return
  nv++; vname[nv] = name; vhex[nv] = hex; vexp[nv] = expect
  vlen[nv] = (hex == "") ? 0 : split(hex, tmpb, " ")
}
/^name:/  { done_vector(); name = $2; hex = ""; expect = ""; next }
/^hex:/   { sub(/^hex:[ \t]*/, ""); if ($0 != "") hex = (hex == "") ? $0 : hex " " $0; next }
/^expect:/ { expect = $2; next }
name != "" && / = / && expect == "ok" {
  f = $1; v = $0; sub(/^[^=]*= */, "", v); sub(/[ \t\r]+$/, "", v)
  print name "\t" f "\t" v >EXP
}
END {
  done_vector()
  # vectors.pcap: every vector on the registered port.
  OUT = DIR "/vec.txt"
  for (i = 1; i <= nv; i++) { frame(vhex[i], 49152, 4794); print i "\t" vname[i] "\t" vexp[i] >(DIR "/vec.idx") }
  # heur.pcap: on an unregistered port, valid vectors must be claimed, those
  # with a wrong version, opcode, flags or pkt_len must not.
  OUT = DIR "/heur.txt"; k = 0
  for (i = 1; i <= nv; i++) {
    e = vexp[i]
    if (e == "ok" || e == "VERSION" || e == "OPCODE" || e == "FLAGS" || e == "LENGTH") {
      frame(vhex[i], 45000, 45001); k++
      print k "\t" vname[i] "\t" (e == "ok" ? "claimed" : "ignored") >(DIR "/heur.idx")
    }
  }
  # coal.pcap: several valid vectors back to back in one datagram, as GSO
  # sends them and a capture on loopback shows them.
  OUT = DIR "/coal.txt"; k = 0
  ngroups = split(GROUPS, grp, ";")
  for (g = 1; g <= ngroups; g++) {
    split(grp[g], parts, ":"); port = parts[1] + 0; cnt = split(parts[2], members, ",")
    h = ""; names = ""
    for (j = 1; j <= cnt; j++) {
      for (i = 1; i <= nv; i++) if (vname[i] == members[j]) break
      if (i > nv) { print "gen.awk: no vector " members[j] >"/dev/stderr"; exit 1 }
      h = (h == "") ? vhex[i] : h " " vhex[i]; names = names (j > 1 ? "," : "") members[j]
    }
    if (parts[3] != "") {  # a cut-off copy of a vector appended: not coalesced
      for (i = 1; i <= nv; i++) if (vname[i] == parts[3]) break
      split(vhex[i], cb, " "); cut = ""
      for (j = 1; j <= 40; j++) cut = cut " " cb[j]
      h = h cut
    }
    frame(h, 45002, port); k++
    print k "\t" names "\t" (parts[3] != "" ? "LENGTH" : "ok") >(DIR "/coal.idx")
  }
  # port.pcap: send_only to port 47101 (preference test).
  OUT = DIR "/port.txt"
  frame(vhex[1], 47100, 47101)
}
EOF
groups="4794:send_first,send_middle,send_last_imm"
groups="$groups;45001:ack_no_sack,ack_sack3_ce,nak_rnr,read_resp_first,atomic_resp,disconnect"
groups="$groups;4794:send_stream7,fetch_add_stream2,read_resp_stream5,connect_req_planes"
groups="$groups;4794:write_only,send_only:"
groups="$groups;4794:send_only:send_only"
if ! awk -v DIR="$tmp" -v EXP="$tmp/vec.exp" -v GROUPS="$groups" -f "$tmp/gen.awk" "$vectors"; then
  echo "test_dissector: cannot parse $vectors"
  exit 1
fi
# The "write_only,send_only:" group ends in an empty cut name: plain coalesced.
for p in vec heur coal port; do
  if ! text2pcap -q "$tmp/$p.txt" "$tmp/$p.pcap" >"$tmp/text2pcap.log" 2>&1; then
    cat "$tmp/text2pcap.log"
    echo "test_dissector: text2pcap failed on $p.txt"
    exit 1
  fi
done

# ---------------------------------------------------------------------------
# 3. Decode.
# ---------------------------------------------------------------------------
fields="frame.number frame.protocols mroce.version mroce.opcode mroce.flags
  mroce.flags.first mroce.flags.last mroce.flags.imm mroce.flags.ack_req
  mroce.flags.solicited mroce.flags.retx mroce.flags.probe mroce.flags.credit
  mroce.flags.stream mroce.flags.secure
  mroce.dst_qpn mroce.token mroce.psn mroce.tsval mroce.entropy mroce.pkt_len
  mroce.req.msn mroce.req.rsn mroce.req.raddr mroce.req.rkey mroce.req.msg_len
  mroce.req.offset mroce.req.imm mroce.req.stream mroce.req.stream_resvd
  mroce.atomic.swap_add mroce.atomic.compare
  mroce.resp.req_msn mroce.resp.msg_len mroce.resp.offset mroce.resp.stream
  mroce.resp.reserved
  mroce.ack.cum_psn mroce.ack.echo_psn mroce.ack.echo_ts mroce.ack.echo_entropy
  mroce.ack.echo_flags mroce.ack.echo_flags.ce mroce.ack.echo_flags.dup
  mroce.ack.sack_words mroce.ack.ce_count mroce.ack.rx_count mroce.ack.credit
  mroce.ack.ack_delay mroce.ack.sack mroce.ack.sacked_psn mroce.ack.sacked_count
  mroce.nak.nak_psn mroce.nak.msn mroce.nak.code mroce.nak.rnr_delay
  mroce.nak.stream mroce.nak.cum_psn mroce.conn.src_qpn mroce.conn.start_psn
  mroce.conn.token mroce.conn.mtu mroce.conn.npaths mroce.conn.rx_window
  mroce.conn.max_rd_atomic mroce.conn.flags mroce.conn.flags.credit
  mroce.conn.flags.rate mroce.conn.max_ack_delay mroce.conn.ext.type
  mroce.conn.max_streams mroce.conn.sack_words mroce.conn.nplanes mroce.conn.plane.addr
  mroce.conn.plane.ipv4 mroce.conn.plane.ipv6 mroce.conn.plane.port
  mroce.conn.plane.reserved
  mroce.payload mroce.payload_len mroce.crc mroce.crc.status mroce.error
  mroce.segments mroce.expert.bad_crc mroce.expert.truncated mroce.expert.length
  mroce.expert.version mroce.expert.opcode mroce.expert.flags mroce.expert.field
  mroce.expert.coalesced _ws.expert.severity _ws.malformed _ws.lua.error"
eargs=""
for f in $fields; do eargs="$eargs -e $f"; done

decode() { # decode <pcap> <out> [tshark options...]
  pcap=$1; out=$2; shift 2
  # shellcheck disable=SC2086
  ts -r "$pcap" -o mroce.secure:FALSE "$@" -T fields -E header=y -E separator=/t -E occurrence=a \
     -E aggregator=, $eargs >"$out"
}
fail_decode=0
decode "$tmp/vec.pcap" "$tmp/vec.out" || fail_decode=1
decode "$tmp/heur.pcap" "$tmp/heur.out" || fail_decode=1
decode "$tmp/coal.pcap" "$tmp/coal.out" || fail_decode=1
decode "$tmp/port.pcap" "$tmp/port_default.out" --disable-heuristic mroce_udp || fail_decode=1
decode "$tmp/port.pcap" "$tmp/port_pref.out" --disable-heuristic mroce_udp \
  -o mroce.udp_port:47101 || fail_decode=1
# -G must come first on tshark's command line.
tshark -G values -X lua_script:"$lua" 2>/dev/null | grep '	mroce\.' >"$tmp/values.out"
tshark -G fields -X lua_script:"$lua" 2>/dev/null | grep '	mroce\.' >"$tmp/fields.out"
if [ "$fail_decode" -ne 0 ] || grep -qi 'lua error' "$tmp"/vec.out "$tmp"/heur.out "$tmp"/coal.out "$tmp"/port_*.out "$tmp/tshark.err"; then
  echo "FAIL tshark: decoding failed or the Lua script raised an error"
  grep -hi 'lua error' "$tmp"/vec.out "$tmp"/heur.out "$tmp"/coal.out "$tmp"/port_*.out "$tmp/tshark.err" | head -5
fi

# ---------------------------------------------------------------------------
# 4. Compare.
# ---------------------------------------------------------------------------
cat >"$tmp/check.awk" <<'EOF'
BEGIN { FS = "\t"; pass = 0; nfail = 0; nfield = 0 }
function hexv(s,   i, v) {
  v = 0; s = tolower(s)
  for (i = 1; i <= length(s); i++) v = v * 16 + index("0123456789abcdef", substr(s, i, 1)) - 1
  return v
}
# Canonical form of an unsigned integer: lowercase hex without 0x or
# leading zeros.  Decimal input is converted digit by digit (exact up to
# 2^53, more than any decimal value in the vectors).
function canon(v,   d, s) {
  gsub(/^[ \t]+|[ \t]+$/, "", v)
  if (v == "") return ""
  if (v ~ /^0[xX]/) { v = tolower(substr(v, 3)); sub(/^0+/, "", v); return v == "" ? "0" : v }
  if (v == "True" || v == "TRUE") return "1"
  if (v == "False" || v == "FALSE") return "0"
  if (v !~ /^[0-9]+$/) return "?" v
  d = v + 0; s = ""
  while (d > 0) { s = substr("0123456789abcdef", d % 16 + 1, 1) s; d = int(d / 16) }
  return s == "" ? "0" : s
}
function bytes(v) { gsub(/[ :]/, "", v); return tolower(v) }
function col(f) { return (f in C) ? F[C[f]] : "<no column " f ">" }
function bad(msg) { errs = errs "\n    " msg }
function expect_eq(what, got, want) {
  nfield++
  if (got != want) bad(what ": got '" got "', want '" want "'")
}
function finish(caseid) {
  if (errs == "") pass++
  else { nfail++; print "FAIL " caseid errs }
  errs = ""
}
function has_error_expert(   n, a, i) {
  n = split(col("_ws.expert.severity"), a, ",")
  for (i = 1; i <= n; i++) if (a[i] == "8388608") return 1
  return 0
}
# Loads the tables: wire.h (op/nak/err/flag), expectations, indexes.
FILENAME == WIRE { W[$1, $2] = $3; if ($1 == "op") nop++; if ($1 == "nak") nnak++
                   if ($1 == "flag") flagnames[++nflags] = $2; next }
FILENAME == EXP  { ne[$1]++; EF[$1, ne[$1]] = $2; EV[$1, ne[$1]] = $3; next }
FILENAME == IDX  { iname[$1] = $2; iexp[$1] = $3; next }
FNR == 1 { for (i = 1; i <= NF; i++) C[$i] = i; next }
{
  split("", F); for (i = 1; i <= NF; i++) F[i] = $i
  fr = $1; name = iname[fr]; xexp = iexp[fr]
  if (MODE == "vectors") check_vector()
  else if (MODE == "heur") check_heur()
  else if (MODE == "coal") check_coal()
}
function check_vector(   i, f, v, path, got, want, n, a, k, w, j, cum, words, list, nf, bit, mask, fl) {
  if (index(col("frame.protocols"), "mroce") == 0 && col("mroce.error") == "") bad("not dissected as MetaRoCE")
  if (col("_ws.lua.error") != "") bad("the Lua dissector raised an error")
  if (xexp != "ok") {
    expect_eq("mroce.error", canon(col("mroce.error")), canon(-W["err", xexp]))
    ex = (xexp == "CRC") ? "bad_crc" : tolower(xexp)
    if (col("mroce.expert." ex) == "") bad("expert info mroce.expert." ex " missing")
    if (xexp == "CRC") expect_eq("mroce.crc.status", col("mroce.crc.status"), "0")
    finish(name " (" xexp ")")
    return
  }
  expect_eq("mroce.error", col("mroce.error"), "")
  expect_eq("mroce.crc.status", col("mroce.crc.status"), "1")
  if (has_error_expert()) bad("expert info of severity Error on a valid packet")
  if (col("_ws.malformed") != "") bad("valid packet marked malformed (_ws.malformed)")
  cum = ""; words = 0
  for (i = 1; i <= ne[name]; i++) {
    f = EF[name, i]; v = EV[name, i]
    if (f ~ /^base\./) path = "mroce." substr(f, 6)
    else if (f ~ /^ack\.sack\[/) path = "mroce.ack.sack"
    else if (f ~ /^conn\.planes\[[0-9]+\]\./) { path = f; sub(/^conn\.planes\[[0-9]+\]\./, "mroce.conn.plane.", path) }
    else if (f == "crc" || f == "payload" || f == "payload_len") path = "mroce." f
    else path = "mroce." f
    got = col(path)
    if (f == "base.opcode") {
      if (!(("op", v) in W)) { bad("unknown opcode name " v " in vector"); continue }
      expect_eq(path, canon(got), canon(W["op", v]))
    } else if (f == "nak.code") {
      if (!(("nak", v) in W)) { bad("unknown NAK code name " v " in vector"); continue }
      expect_eq(path, canon(got), canon(W["nak", v]))
    } else if (f == "base.flags") {
      mask = 0
      if (v != "0") {
        nf = split(v, fl, "|")
        for (k = 1; k <= nf; k++) {
          if (!(("flag", fl[k]) in W)) { bad("unknown flag " fl[k] " in vector"); continue }
          mask += hexv(substr(W["flag", fl[k]], 3))
        }
      }
      expect_eq(path, canon(got), canon(mask ""))
      for (k = 1; k <= nflags; k++) {
        bit = hexv(substr(W["flag", flagnames[k]], 3))
        expect_eq("mroce.flags." tolower(flagnames[k]), canon(col("mroce.flags." tolower(flagnames[k]))),
                  (int(mask / bit) % 2) ? "1" : "0")
      }
    } else if (f ~ /^ack\.sack\[/) {
      j = substr(f, 10) + 0
      n = split(got, a, ",")
      expect_eq(f, (j + 1 <= n) ? canon(a[j + 1]) : "<missing>", canon(v))
      sackw[j] = v
    } else if (f ~ /^conn\.planes\[/) {
      # conn.planes[j].X: the j-th occurrence of mroce.conn.plane.X.
      j = substr(f, 13) + 0
      n = split(got, a, ",")
      got = (j + 1 <= n) ? a[j + 1] : "<missing>"
      if (f ~ /\.addr$/) expect_eq(f, bytes(got), bytes(v))
      else expect_eq(f, canon(got), canon(v))
    } else if (f == "payload") {
      expect_eq(path, bytes(got), bytes(v))
    } else {
      expect_eq(path, canon(got), canon(v))
      if (f == "ack.cum_psn") cum = v + 0
      if (f == "ack.sack_words") words = v + 0
    }
  }
  # ACK: number of SACK words shown, and the SACKed PSNs computed from them.
  if (cum != "") {
    n = (col("mroce.ack.sack") == "") ? 0 : split(col("mroce.ack.sack"), a, ",")
    expect_eq("number of mroce.ack.sack", n "", words "")
    list = ""; k = 0
    for (j = 0; j < words; j++) {
      w = (substr(sackw[j], 1, 2) == "0x") ? hexv(substr(sackw[j], 3)) : sackw[j] + 0
      for (bit = 0; bit < 32; bit++)
        if (int(w / 2 ^ bit) % 2) { list = list (k++ ? "," : "") ((cum + 1 + 32 * j + bit) % 4294967296) }
    }
    expect_eq("mroce.ack.sacked_psn", col("mroce.ack.sacked_psn"), list)
    if (words > 0) expect_eq("mroce.ack.sacked_count", col("mroce.ack.sacked_count"), k "")
    split("", sackw)
  }
  finish(name)
}
function check_heur() {
  claimed = (index(col("frame.protocols"), "mroce") > 0)
  if (xexp == "claimed") {
    if (!claimed) bad("valid vector on port 45001 not claimed by the heuristic")
    expect_eq("mroce.error", col("mroce.error"), "")
    expect_eq("mroce.crc.status", col("mroce.crc.status"), "1")
  } else if (claimed) bad("heuristic claimed an invalid packet")
  finish("heuristic " name " (" xexp ")")
}
function check_coal(   n, a, i, want, st) {
  n = split(name, a, ",")
  if (xexp == "ok") {
    expect_eq("mroce.segments", col("mroce.segments"), n "")
    want = ""
    for (i = 1; i <= n; i++) want = want (i > 1 ? "," : "") canon(W["op", toupper(OPOF[a[i]])])
    st = col("mroce.opcode"); gsub(/0x0*/, "", st)
    expect_eq("mroce.opcode list", st, want)
    expect_eq("mroce.error", col("mroce.error"), "")
    want = ""; for (i = 1; i <= n; i++) want = want (i > 1 ? "," : "") "1"
    expect_eq("mroce.crc.status", col("mroce.crc.status"), want)
    if (col("mroce.expert.coalesced") == "") bad("expert info mroce.expert.coalesced missing")
  } else {
    # A packet followed by a cut-off one: not coalesced, pkt_len mismatch.
    expect_eq("mroce.segments", col("mroce.segments"), "")
    expect_eq("mroce.error", canon(col("mroce.error")), canon(-W["err", xexp]))
  }
  finish("coalesced " name " (" xexp ")")
}
END {
  if (MODE == "vectors" && fr == "") { print "FAIL no frames decoded"; nfail++ }
  print pass, nfail, nfield >RESULT
}
EOF

# Opcode of each vector (for the coalesced cases).
opof=$(awk '/^name:/ {n = $2} /^base.opcode = / {printf "%s=%s ", n, $3}' "$vectors")

total_pass=0; total_fail=0; total_fields=0
run_check() { # run_check <mode> <idx> <out>
  awk -v MODE="$1" -v WIRE="$tmp/wire.tab" -v EXP="$tmp/vec.exp" -v IDX="$2" \
      -v RESULT="$tmp/result" \
      -v OPOFS="$opof" \
      'BEGIN { n = split(OPOFS, o, " "); for (i = 1; i <= n; i++) { split(o[i], kv, "="); OPOF[kv[1]] = kv[2] } }
       '"$(cat "$tmp/check.awk")" \
      "$tmp/wire.tab" "$tmp/vec.exp" "$2" "$3"
  read -r p f n <"$tmp/result"
  total_pass=$((total_pass + p)); total_fail=$((total_fail + f)); total_fields=$((total_fields + n))
}
run_check vectors "$tmp/vec.idx" "$tmp/vec.out"
run_check heur "$tmp/heur.idx" "$tmp/heur.out"
run_check coal "$tmp/coal.idx" "$tmp/coal.out"

# Name tables of the dissector against wire.h, both ways.
tables_errs=$(awk -F '\t' '
  FILENAME == ARGV[1] { W[$1, $2] = $3; if ($1 == "op" || $1 == "nak" || $1 == "flag") list[++n] = $1 "\t" $2 "\t" $3; next }
  $1 == "V" && $2 == "mroce.opcode"  { got["op", $4] = $3; cnt["op"]++ }
  $1 == "V" && $2 == "mroce.nak.code" { got["nak", $4] = $3; cnt["nak"]++ }
  $1 == "F" && $3 ~ /^mroce\.flags\.[a-z_]+$/ && $3 != "mroce.flags.reserved" { got["flag", toupper(substr($3, 13))] = $7; cnt["flag"]++ }
  function num(s) { return (s ~ /^0x/) ? s : sprintf("0x%x", s) }
  END {
    for (i = 1; i <= n; i++) {
      split(list[i], p, "\t"); want[p[1]]++
      if (!((p[1], p[2]) in got)) print "missing " p[1] " " p[2]
      else if (tolower(sprintf("%d", strtonum_(got[p[1], p[2]]))) != sprintf("%d", strtonum_(p[3])))
        print p[1] " " p[2] ": dissector " got[p[1], p[2]] ", wire.h " p[3]
    }
    for (k in want) if (cnt[k] != want[k]) print k ": dissector has " cnt[k] " names, wire.h " want[k]
  }
  function strtonum_(s,   v, i) {
    if (s !~ /^0x/) return s + 0
    v = 0; s = tolower(substr(s, 3))
    for (i = 1; i <= length(s); i++) v = v * 16 + index("0123456789abcdef", substr(s, i, 1)) - 1
    return v
  }' "$tmp/wire.tab" "$tmp/values.out" "$tmp/fields.out")
if [ -z "$tables_errs" ] && [ -s "$tmp/values.out" ]; then
  total_pass=$((total_pass + 1))
else
  total_fail=$((total_fail + 1))
  echo "FAIL name tables (opcodes, NAK codes, flags) differ from wire.h:"
  echo "${tables_errs:-    tshark -G values printed nothing}" | sed 's/^/    /'
fi

# Preference: with the heuristic off, port 47101 decodes only when configured.
port_case() { # port_case <out> <want: yes|no> <label>
  if awk -F '\t' 'NR == 2 { exit !(index($2, "mroce") > 0) }' "$1"; then got=yes; else got=no; fi
  if [ "$got" = "$2" ]; then
    total_pass=$((total_pass + 1))
  else
    total_fail=$((total_fail + 1))
    echo "FAIL preference: $3: dissected=$got, want $2"
  fi
}
port_case "$tmp/port_default.out" no "port 47101 without mroce.udp_port and without heuristic"
port_case "$tmp/port_pref.out" yes "port 47101 with -o mroce.udp_port:47101"

if [ "$fail_decode" -ne 0 ]; then total_fail=$((total_fail + 1)); fi
echo "test_dissector: $total_pass passed, $total_fail failed ($total_fields field comparisons)"
[ "$total_fail" -eq 0 ]
