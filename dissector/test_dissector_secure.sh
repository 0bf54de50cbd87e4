#!/bin/sh
# test_dissector_secure.sh - the dissector on secure mode's packets: every
# sealed vector of tests/vectors/secure_vectors.txt becomes one UDP frame
# (a pcap written by python3), tshark decodes it with dissector/mroce.lua,
# and the SEC header fields (mroce.sec.spi, .epoch, .suite, .seq), the
# opcode and the SECURE flag must be those of the vector, with no decode
# error, no Lua error and the tag shown; the CONNECT_REQ vector must decode
# cleanly with its SECURE extension.  With the secure preference off, a
# sealed packet must be reported as a FLAGS error, as a receiver without
# secure mode drops it (WIRE-38).
#
# Usage: dissector/test_dissector_secure.sh [secure_vectors.txt]
# Exits 1 on a failure; without tshark or python3 exits $MROCE_SKIP_CODE.
set -u
here=$(cd "$(dirname "$0")" && pwd)
root=$(dirname "$here")
vectors=${1:-$root/tests/vectors/secure_vectors.txt}
lua=$here/mroce.lua
skip=${MROCE_SKIP_CODE:-0}
for tool in tshark python3; do
  command -v "$tool" >/dev/null 2>&1 || {
    echo "test_dissector_secure: SKIP: $tool not found"; exit "$skip"; }
done
tmp=$(mktemp -d "${TMPDIR:-/tmp}/mroce_dsec.XXXXXX")
trap 'rm -rf "$tmp"' EXIT INT TERM

python3 - "$vectors" "$tmp/sec.pcap" "$tmp/expect.tsv" <<'PY'
import struct, sys
vec, pcap, exp = sys.argv[1:4]
vs, cur = [], None
for line in open(vec):
    line = line.strip()
    if line.startswith("name: "):
        cur = {"name": line[6:], "hex": b""}
        vs.append(cur)
    elif cur is not None and line.startswith("hex: "):
        cur["hex"] += bytes.fromhex(line[5:].replace(" ", ""))
    elif cur is not None and ": " in line:
        k, v = line.split(": ", 1)
        cur[k] = v
def frame(payload):
    udp = struct.pack(">HHHH", 49152, 4794, 8 + len(payload), 0) + payload
    ip = struct.pack(">BBHHHBBH4s4s", 0x45, 0, 20 + len(udp), 1, 0x4000, 64,
                     17, 0, bytes([127, 0, 0, 1]), bytes([127, 0, 0, 2]))
    s = sum(struct.unpack(">10H", ip))
    while s > 0xffff:
        s = (s >> 16) + (s & 0xffff)
    ip = ip[:10] + struct.pack(">H", 0xffff - s) + ip[12:]
    return bytes(6) + bytes([0, 0, 0, 0, 0, 1]) + b"\x08\x00" + ip + udp
with open(pcap, "wb") as f, open(exp, "w") as e:
    f.write(struct.pack("<IHHiIII", 0xa1b2c3d4, 2, 4, 0, 0, 65535, 1))
    for v in vs:
        fr = frame(v["hex"])
        f.write(struct.pack("<IIII", 0, 0, len(fr), len(fr)) + fr)
        if v["name"].startswith("send_"):
            e.write("%s\t0x%08x\t%d\t%s\t%d\n" % (v["name"], int(v["spi"], 16),
                    int(v["epoch"]), v["suite"], int(v["seq"])))
        else:
            e.write("%s\t-\t-\t-\t-\n" % v["name"])
PY
[ -s "$tmp/sec.pcap" ] || { echo "test_dissector_secure: no pcap"; exit 1; }

tshark -X lua_script:"$lua" -r "$tmp/sec.pcap" -T fields -E separator=/t \
  -E occurrence=f -e mroce.sec.spi -e mroce.sec.epoch -e mroce.sec.suite \
  -e mroce.sec.seq -e mroce.flags.secure -e mroce.sec.tag -e mroce.error \
  -e _ws.lua.error -e mroce.opcode 2>/dev/null >"$tmp/got.tsv"
tshark -X lua_script:"$lua" -r "$tmp/sec.pcap" -o mroce.secure:FALSE \
  -T fields -e mroce.error 2>/dev/null >"$tmp/off.tsv"

fails=$(paste "$tmp/expect.tsv" "$tmp/got.tsv" "$tmp/off.tsv" | awk -F'\t' '
  { name = $1 }
  name ~ /^send_/ {
    if (tolower($6) != $2 || $7 != $3 || $8 != $4 || $9 != $5)
      print name ": SEC header " $6 "/" $7 "/" $8 "/" $9 ", expected " $2 "/" $3 "/" $4 "/" $5
    if ($10 != "1" && $10 != "True") print name ": SECURE flag not shown (" $10 ")"
    if ($11 == "") print name ": no tag"
    if ($12 != "") print name ": decode error " $12
    if ($13 != "") print name ": Lua error " $13
    if ($14 != "0x10" && $14 != "16") print name ": opcode " $14
    if ($15 != "4") print name ": with secure off, error " $15 ", expected 4 (FLAGS)"
    next
  }
  { if ($12 != "" || $13 != "") print name ": error " $12 " " $13 }
  END { if (NR != 4) print "expected 4 frames, got " NR }')
if [ -n "$fails" ]; then
  echo "$fails"
  echo "test_dissector_secure: FAILED"
  exit 1
fi
echo "test_dissector_secure: 4 vectors ok"
