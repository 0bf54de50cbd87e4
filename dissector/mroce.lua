--[[
mroce.lua - Wireshark/tshark dissector for MetaRoCE, an RDMA transport over UDP.

Layouts, opcodes, flags and NAK codes follow include/mroce/wire.h and
docs/spec/wire-format.md (normative); tests/vectors/wire_vectors.txt pins
them down and dissector/test_dissector.sh checks this file against it.
All multi-byte fields are big-endian.

Load it with
    tshark    -X lua_script:dissector/mroce.lua -r capture.pcap
    wireshark -X lua_script:dissector/mroce.lua
or copy it into the personal Lua plugins folder (~/.local/lib/wireshark/plugins/).

Registered on UDP port 4794 (preference "mroce.udp_port"), in "Decode As"
for udp.port, and as a UDP heuristic ("mroce_udp") that claims a datagram on
any port when its first byte is version 1, its opcode is known and its
pkt_len fields add up to the UDP payload length (one packet, or several
packets back to back as GSO/GRO coalesces them on loopback).

The dissector mirrors mrw_pkt_decode(): the checks run in the order of
WIRE-25/WIRE-26 and the first failing one is reported as mroce.error (same
names as MROCE_WIRE_E*), with an expert info for every problem found.
Fields that are present are shown even when the packet is invalid.
]]

local mroce = Proto("mroce", "MetaRoCE")

-- ---------------------------------------------------------------------------
-- Constants (wire.h)
-- ---------------------------------------------------------------------------

local DEFAULT_PORT = 4794
local VERSION = 1
local BASE_LEN, REQ_LEN, ATOMIC_LEN, RESP_LEN = 28, 32, 16, 16
local ACK_LEN, NAK_LEN, CONN_LEN, CRC_LEN = 32, 16, 36, 4
local STREAM_LEN = 4 -- STREAM word after the REQ header (flag STREAM)
local MAX_SACK_WORDS = 8
local ATOMIC_VAL_LEN = 8
local MAX_PKT_LEN = 65000
local MIN_MTU = 256

local OP = {
    SEND = 0x10, WRITE = 0x11, READ_REQ = 0x12, READ_RESP = 0x13,
    FETCH_ADD = 0x14, CMP_SWAP = 0x15, ATOMIC_RESP = 0x16,
    ACK = 0x20, NAK = 0x21,
    CONNECT_REQ = 0x30, CONNECT_RESP = 0x31,
    DISCONNECT = 0x32, DISCONNECT_ACK = 0x33,
}
local opcode_names = {}
for name, val in pairs(OP) do opcode_names[val] = name end

local F = {
    FIRST = 0x0001, LAST = 0x0002, IMM = 0x0004, ACK_REQ = 0x0008,
    SOLICITED = 0x0010, RETX = 0x0020, PROBE = 0x0040, CREDIT = 0x0080,
    STREAM = 0x0100,
}
local FLAG_ORDER = { "FIRST", "LAST", "IMM", "ACK_REQ", "SOLICITED", "RETX",
                     "PROBE", "CREDIT", "STREAM" }
local F_KNOWN = 0x01ff
local F_RESERVED = 0xfe00

local ECHO_CE, ECHO_DUP, ECHO_KNOWN = 0x01, 0x02, 0x03
local CONN_F_CREDIT = 0x00000001
local CONN_F_RATE = 0x00000002 -- ACK Credit is a rate hint in Mbit/s

-- CONN extensions (type-length-value after the CONN header).
local EXT_STREAMS, EXT_PLANES, EXT_SACK = 1, 2, 4
local EXT_STREAMS_LEN = 4
local EXT_SACK_LEN = 4 -- SACK Words (1), reserved (3) (WIRE-52)
local EXT_PLANE_LEN = 20 -- address (16), UDP port (2), reserved (2)
local MAX_PLANES = 8
local ext_type_names = { [EXT_STREAMS] = "STREAMS", [EXT_PLANES] = "PLANES", [3] = "SECURE",
                         [EXT_SACK] = "SACK" }
local CREDIT_UNLIMITED = 0xffffffff

local nak_code_names = {
    [0x01] = "RNR",
    [0x02] = "INVALID_REQUEST",
    [0x03] = "REMOTE_ACCESS_KEY",
    [0x04] = "REMOTE_ACCESS_BOUNDS",
    [0x05] = "REMOTE_ACCESS_PERM",
    [0x06] = "REMOTE_OP_ERROR",
    [0x07] = "INVALID_OPCODE",
}

-- Decode errors: MROCE_WIRE_E<name> = -value.
local E = { TRUNCATED = 1, VERSION = 2, OPCODE = 3, FLAGS = 4, LENGTH = 5,
            CRC = 6, FIELD = 7 }
local error_names = {}
for name, val in pairs(E) do error_names[val] = name end

-- Checksum status, same values as Wireshark's proto_checksum_vals.
local CRC_BAD, CRC_GOOD, CRC_UNVERIFIED = 0, 1, 2
local crc_status_names = { [CRC_BAD] = "Bad", [CRC_GOOD] = "Good",
                           [CRC_UNVERIFIED] = "Unverified" }

-- ---------------------------------------------------------------------------
-- Bit operations: bit32 (Lua 5.2), LuaBitOp "bit" (Wireshark's bundled
-- library), or native operators (Lua 5.3+).  Results may be signed with
-- "bit"; every value that leaves this section is normalised with u32().
-- ---------------------------------------------------------------------------

local band, bxor, rshift, lshift
do
    local lib = rawget(_G, "bit32") or rawget(_G, "bit")
    if lib then
        band, bxor, rshift, lshift = lib.band, lib.bxor, lib.rshift, lib.lshift
    else
        local ops = load([[
            return function(a, b) return a & b end,
                   function(a, b) return a ~ b end,
                   function(a, n) return (a & 0xffffffff) >> n end,
                   function(a, n) return (a << n) & 0xffffffff end
        ]])
        band, bxor, rshift, lshift = ops()
    end
end

local function u32(x) return x % 4294967296 end

-- ---------------------------------------------------------------------------
-- CRC32C (Castagnoli, reflected polynomial 0x82F63B78, init and final xor
-- 0xFFFFFFFF), table driven.  Check value over "123456789" is 0xE3069283.
-- ---------------------------------------------------------------------------

local CRC_TABLE = {}
for i = 0, 255 do
    local c = i
    for _ = 1, 8 do
        if band(c, 1) ~= 0 then
            c = bxor(rshift(c, 1), 0x82F63B78)
        else
            c = rshift(c, 1)
        end
    end
    CRC_TABLE[i] = u32(c)
end

local function crc32c_string(s)
    local crc = 0xffffffff
    local byte = string.byte
    local n = #s
    local i = 1
    while i <= n do
        -- string.byte on chunks keeps the call count low for 64 KiB packets.
        local j = math.min(i + 63, n)
        local bytes = { byte(s, i, j) }
        for k = 1, #bytes do
            crc = bxor(CRC_TABLE[band(bxor(crc, bytes[k]), 0xff)], rshift(crc, 8))
        end
        i = j + 1
    end
    return u32(bxor(crc, 0xffffffff))
end
assert(crc32c_string("123456789") == 0xE3069283, "mroce.lua: CRC32C self-test failed")

-- ---------------------------------------------------------------------------
-- Fields
-- ---------------------------------------------------------------------------

local pf = {}
local function field(key, f) pf[key] = f; return f end

-- Base header
field("version", ProtoField.uint8("mroce.version", "Version", base.DEC))
field("opcode", ProtoField.uint8("mroce.opcode", "Opcode", base.HEX, opcode_names))
field("flags", ProtoField.uint16("mroce.flags", "Flags", base.HEX))
field("flags_first", ProtoField.bool("mroce.flags.first", "FIRST", 16,
    { "First packet of a message", "Not first" }, F.FIRST))
field("flags_last", ProtoField.bool("mroce.flags.last", "LAST", 16,
    { "Last packet of a message", "Not last" }, F.LAST))
field("flags_imm", ProtoField.bool("mroce.flags.imm", "IMM", 16,
    { "Immediate data valid", "No immediate" }, F.IMM))
field("flags_ack_req", ProtoField.bool("mroce.flags.ack_req", "ACK_REQ", 16,
    { "Acknowledge without delay", "Not requested" }, F.ACK_REQ))
field("flags_solicited", ProtoField.bool("mroce.flags.solicited", "SOLICITED", 16,
    { "Solicited event requested", "Not solicited" }, F.SOLICITED))
field("flags_retx", ProtoField.bool("mroce.flags.retx", "RETX", 16,
    { "Retransmission", "First transmission" }, F.RETX))
field("flags_probe", ProtoField.bool("mroce.flags.probe", "PROBE", 16,
    { "Tail-loss probe", "Not a probe" }, F.PROBE))
field("flags_credit", ProtoField.bool("mroce.flags.credit", "CREDIT", 16,
    { "Receiver-driven credits asked", "Not asked" }, F.CREDIT))
field("flags_stream", ProtoField.bool("mroce.flags.stream", "STREAM", 16,
    { "Request of a stream other than 0: STREAM word follows the REQ header",
      "Default stream (0)" }, F.STREAM))
field("flags_reserved", ProtoField.uint16("mroce.flags.reserved", "Reserved", base.HEX,
    nil, F_RESERVED))
field("dst_qpn", ProtoField.uint32("mroce.dst_qpn", "Dst QPN", base.DEC))
field("token", ProtoField.uint64("mroce.token", "Token", base.HEX))
field("psn", ProtoField.uint32("mroce.psn", "PSN", base.DEC))
field("tsval", ProtoField.uint32("mroce.tsval", "TSval", base.DEC))
field("entropy", ProtoField.uint16("mroce.entropy", "Entropy", base.DEC))
field("pkt_len", ProtoField.uint16("mroce.pkt_len", "Pkt Len", base.DEC))

-- REQ header
field("req_msn", ProtoField.uint32("mroce.req.msn", "MSN", base.DEC))
field("req_rsn", ProtoField.uint32("mroce.req.rsn", "RSN", base.DEC))
field("req_raddr", ProtoField.uint64("mroce.req.raddr", "Remote Address", base.HEX))
field("req_rkey", ProtoField.uint32("mroce.req.rkey", "RKey", base.HEX))
field("req_msg_len", ProtoField.uint32("mroce.req.msg_len", "Msg Len", base.DEC))
field("req_offset", ProtoField.uint32("mroce.req.offset", "Offset", base.DEC))
field("req_imm", ProtoField.uint32("mroce.req.imm", "Immediate", base.HEX))

-- STREAM word (requests with flag STREAM)
field("req_stream", ProtoField.uint16("mroce.req.stream", "Stream ID", base.DEC))
field("req_stream_resvd", ProtoField.uint16("mroce.req.stream_resvd", "Reserved", base.HEX))

-- ATOMIC header
field("atomic_swap_add", ProtoField.uint64("mroce.atomic.swap_add", "Swap / Add", base.HEX))
field("atomic_compare", ProtoField.uint64("mroce.atomic.compare", "Compare", base.HEX))

-- RESP header
field("resp_req_msn", ProtoField.uint32("mroce.resp.req_msn", "Req MSN", base.DEC))
field("resp_msg_len", ProtoField.uint32("mroce.resp.msg_len", "Msg Len", base.DEC))
field("resp_offset", ProtoField.uint32("mroce.resp.offset", "Offset", base.DEC))
field("resp_stream", ProtoField.uint16("mroce.resp.stream", "Stream", base.DEC))
field("resp_reserved", ProtoField.uint16("mroce.resp.reserved", "Reserved", base.HEX))

-- ACK header
field("ack_cum_psn", ProtoField.uint32("mroce.ack.cum_psn", "Cum PSN", base.DEC))
field("ack_echo_psn", ProtoField.uint32("mroce.ack.echo_psn", "Echo PSN", base.DEC))
field("ack_echo_ts", ProtoField.uint32("mroce.ack.echo_ts", "Echo TS", base.DEC))
field("ack_echo_entropy", ProtoField.uint16("mroce.ack.echo_entropy", "Echo Entropy", base.DEC))
field("ack_echo_flags", ProtoField.uint8("mroce.ack.echo_flags", "Echo Flags", base.HEX))
field("ack_echo_ce", ProtoField.bool("mroce.ack.echo_flags.ce", "CE", 8,
    { "Echoed packet was CE-marked", "Not CE-marked" }, ECHO_CE))
field("ack_echo_dup", ProtoField.bool("mroce.ack.echo_flags.dup", "DUP", 8,
    { "Echoed packet was a duplicate", "Not a duplicate" }, ECHO_DUP))
field("ack_echo_reserved", ProtoField.uint8("mroce.ack.echo_flags.reserved", "Reserved",
    base.HEX, nil, 0xfc))
field("ack_sack_words", ProtoField.uint8("mroce.ack.sack_words", "SACK Words", base.DEC))
field("ack_ce_count", ProtoField.uint32("mroce.ack.ce_count", "CE Count", base.DEC))
field("ack_rx_count", ProtoField.uint32("mroce.ack.rx_count", "RX Count", base.DEC))
-- The dissector cannot see whether RATE was negotiated (CONN flags of both
-- sides), so the label names both meanings.
field("ack_credit", ProtoField.uint32("mroce.ack.credit", "Credit (bytes, or Mbit/s with RATE)", base.DEC,
    { [CREDIT_UNLIMITED] = "unlimited" }))
field("ack_ack_delay", ProtoField.uint32("mroce.ack.ack_delay", "ACK Delay (ns)", base.DEC))
field("ack_sack", ProtoField.uint32("mroce.ack.sack", "SACK Word", base.HEX))
field("ack_sacked_psn", ProtoField.uint32("mroce.ack.sacked_psn", "SACKed PSN", base.DEC))
field("ack_sacked_count", ProtoField.uint32("mroce.ack.sacked_count", "SACKed PSNs", base.DEC))
field("ack_sack_list", ProtoField.string("mroce.ack.sack_list", "SACKed PSN list"))

-- NAK header
field("nak_nak_psn", ProtoField.uint32("mroce.nak.nak_psn", "NAK PSN", base.DEC))
field("nak_msn", ProtoField.uint32("mroce.nak.msn", "MSN", base.DEC))
field("nak_code", ProtoField.uint8("mroce.nak.code", "Code", base.HEX, nak_code_names))
field("nak_rnr_delay", ProtoField.uint8("mroce.nak.rnr_delay", "RNR Delay (x 10 us)", base.DEC))
field("nak_stream", ProtoField.uint16("mroce.nak.stream", "Stream", base.DEC))
field("nak_cum_psn", ProtoField.uint32("mroce.nak.cum_psn", "Cum PSN", base.DEC))

-- CONN header
field("conn_src_qpn", ProtoField.uint32("mroce.conn.src_qpn", "Src QPN", base.DEC))
field("conn_start_psn", ProtoField.uint32("mroce.conn.start_psn", "Start PSN", base.DEC))
field("conn_token", ProtoField.uint64("mroce.conn.token", "Token", base.HEX))
field("conn_mtu", ProtoField.uint16("mroce.conn.mtu", "MTU", base.DEC))
field("conn_npaths", ProtoField.uint16("mroce.conn.npaths", "NPaths", base.DEC))
field("conn_rx_window", ProtoField.uint32("mroce.conn.rx_window", "RX Window", base.DEC))
field("conn_max_rd_atomic", ProtoField.uint32("mroce.conn.max_rd_atomic", "Max RD Atomic", base.DEC))
field("conn_flags", ProtoField.uint32("mroce.conn.flags", "Flags", base.HEX))
field("conn_flags_credit", ProtoField.bool("mroce.conn.flags.credit", "CREDIT", 32,
    { "Receiver-driven credit mode", "No credit mode" }, CONN_F_CREDIT))
field("conn_flags_rate", ProtoField.bool("mroce.conn.flags.rate", "RATE", 32,
    { "ACK Credit is a rate hint (Mbit/s)", "ACK Credit in bytes" }, CONN_F_RATE))
field("conn_max_ack_delay", ProtoField.uint32("mroce.conn.max_ack_delay", "Max ACK Delay (ns)", base.DEC))

-- CONN extensions
field("conn_ext_type", ProtoField.uint8("mroce.conn.ext.type", "Extension Type", base.DEC, ext_type_names))
field("conn_ext_len", ProtoField.uint8("mroce.conn.ext.len", "Extension Length", base.DEC))
field("conn_ext_data", ProtoField.bytes("mroce.conn.ext.data", "Extension Value"))
field("conn_max_streams", ProtoField.uint16("mroce.conn.max_streams", "Max Streams", base.DEC))
field("conn_streams_resvd", ProtoField.uint16("mroce.conn.streams_resvd", "Reserved", base.HEX))
field("conn_sack_words", ProtoField.uint8("mroce.conn.sack_words", "SACK Words", base.DEC))
field("conn_sack_resvd", ProtoField.bytes("mroce.conn.sack_resvd", "Reserved"))
field("conn_nplanes", ProtoField.uint8("mroce.conn.nplanes", "Plane Count", base.DEC))
field("conn_planes_resvd", ProtoField.bytes("mroce.conn.planes_resvd", "Reserved"))
field("conn_plane_addr", ProtoField.bytes("mroce.conn.plane.addr", "Plane Address"))
field("conn_plane_ipv4", ProtoField.ipv4("mroce.conn.plane.ipv4", "Plane IPv4 Address"))
field("conn_plane_ipv6", ProtoField.ipv6("mroce.conn.plane.ipv6", "Plane IPv6 Address"))
field("conn_plane_port", ProtoField.uint16("mroce.conn.plane.port", "Plane UDP Port", base.DEC))
field("conn_plane_reserved", ProtoField.uint16("mroce.conn.plane.reserved", "Reserved", base.HEX))

-- Payload, trailer, diagnostics
field("payload", ProtoField.bytes("mroce.payload", "Payload"))
field("payload_len", ProtoField.uint32("mroce.payload_len", "Payload Length", base.DEC))
field("extra", ProtoField.bytes("mroce.extra", "Unexpected bytes before the CRC"))
field("trailing", ProtoField.bytes("mroce.trailing", "Bytes after Pkt Len"))
field("data", ProtoField.bytes("mroce.data", "Undecoded data"))
field("crc", ProtoField.uint32("mroce.crc", "CRC32C", base.HEX))
field("crc_computed", ProtoField.uint32("mroce.crc.computed", "Computed CRC32C", base.HEX))
field("crc_status", ProtoField.uint8("mroce.crc.status", "CRC32C Status", base.DEC,
    crc_status_names))
field("error", ProtoField.uint8("mroce.error", "Decode error", base.DEC, error_names))
field("segment", ProtoField.uint16("mroce.segment", "Packet in coalesced datagram", base.DEC))
field("segments", ProtoField.uint16("mroce.segments", "Packets in datagram", base.DEC))

-- Secure mode (wire-format.md section 8): the SEC header of a sealed packet.
local F_SECURE = 0x8000
local SEC_HDR_LEN, SEC_TAG_LEN = 16, 16
local suite_names = { [1] = "AES-128-GCM", [2] = "AES-256-GCM", [3] = "AES-128-GMAC" }
field("flags_secure", ProtoField.bool("mroce.flags.secure", "SECURE", 16,
    nil, F_SECURE))
field("sec_spi", ProtoField.uint32("mroce.sec.spi", "SPI", base.HEX))
field("sec_epoch", ProtoField.uint16("mroce.sec.epoch", "Epoch", base.DEC))
field("sec_suite", ProtoField.uint8("mroce.sec.suite", "Suite", base.DEC, suite_names))
field("sec_key_gen", ProtoField.uint8("mroce.sec.key_gen", "Key Gen", base.DEC))
field("sec_seq", ProtoField.uint64("mroce.sec.seq", "Seq", base.DEC))
field("sec_protected", ProtoField.bytes("mroce.sec.protected",
    "Encrypted opcode headers and payload"))
field("sec_clear", ProtoField.bytes("mroce.sec.clear",
    "Opcode headers and payload (integrity only, in clear)"))
field("sec_tag", ProtoField.bytes("mroce.sec.tag", "AES-GCM tag"))
field("sec_tag_status", ProtoField.uint8("mroce.sec.tag_status", "Tag verified with the key file",
    base.DEC, crc_status_names))
field("sec_decrypted", ProtoField.bytes("mroce.sec.decrypted",
    "Decrypted packet (clear form, before its CRC)"))

local field_list = {}
for _, f in pairs(pf) do field_list[#field_list + 1] = f end
mroce.fields = field_list

-- ---------------------------------------------------------------------------
-- Expert infos
-- ---------------------------------------------------------------------------

local ex = {
    bad_crc = ProtoExpert.new("mroce.expert.bad_crc", "Bad CRC32C",
        expert.group.CHECKSUM, expert.severity.ERROR),
    truncated = ProtoExpert.new("mroce.expert.truncated", "Truncated packet",
        expert.group.MALFORMED, expert.severity.ERROR),
    length = ProtoExpert.new("mroce.expert.length", "Pkt Len disagrees with the datagram length",
        expert.group.MALFORMED, expert.severity.ERROR),
    version = ProtoExpert.new("mroce.expert.version", "Unknown version",
        expert.group.MALFORMED, expert.severity.ERROR),
    opcode = ProtoExpert.new("mroce.expert.opcode", "Unknown opcode",
        expert.group.MALFORMED, expert.severity.ERROR),
    flags = ProtoExpert.new("mroce.expert.flags", "Reserved flag bits set",
        expert.group.MALFORMED, expert.severity.ERROR),
    field = ProtoExpert.new("mroce.expert.field", "Field out of range for this opcode",
        expert.group.MALFORMED, expert.severity.ERROR),
    coalesced = ProtoExpert.new("mroce.expert.coalesced",
        "Several MetaRoCE packets in one datagram (GSO/GRO coalescing)",
        expert.group.COMMENTS_GROUP, expert.severity.NOTE),
    nak = ProtoExpert.new("mroce.expert.nak", "NAK",
        expert.group.RESPONSE_CODE, expert.severity.WARN),
    retx = ProtoExpert.new("mroce.expert.retx", "Retransmission",
        expert.group.SEQUENCE, expert.severity.NOTE),
    sec_tag = ProtoExpert.new("mroce.expert.sec_tag", "Tag does not verify under the key file's key",
        expert.group.CHECKSUM, expert.severity.ERROR),
    sec_key = ProtoExpert.new("mroce.expert.sec_key", "Cannot decrypt: no usable key file",
        expert.group.UNDECODED, expert.severity.WARN),
    snap = ProtoExpert.new("mroce.expert.snaplen", "Packet size limited during capture, CRC not verified",
        expert.group.UNDECODED, expert.severity.NOTE),
}
mroce.experts = { ex.bad_crc, ex.truncated, ex.length, ex.version, ex.opcode,
                  ex.flags, ex.field, ex.coalesced, ex.nak, ex.retx, ex.snap,
                  ex.sec_tag, ex.sec_key }

-- ---------------------------------------------------------------------------
-- Preferences
-- ---------------------------------------------------------------------------

mroce.prefs.udp_port = Pref.uint("UDP port", DEFAULT_PORT,
    "UDP port of MetaRoCE endpoints (default 4794). Other ports are found by the heuristic.")
mroce.prefs.check_crc = Pref.bool("Verify CRC32C", true,
    "Compute the CRC32C trailer of every packet and flag mismatches")
mroce.prefs.split_coalesced = Pref.bool("Split coalesced datagrams", true,
    "Dissect several back-to-back MetaRoCE packets in one UDP datagram (as captured " ..
    "on loopback with UDP GSO/GRO) instead of reporting a length error")
mroce.prefs.secure = Pref.bool("Decode secure mode", true,
    "Read the SECURE flag (0x8000) as a sealed packet and show its SEC header " ..
    "(wire-format.md section 8); off: the flag is a reserved bit, as for a " ..
    "receiver without secure mode")
mroce.prefs.key_file = Pref.string("Master key file", "",
    "A file of the secure domain's master key in hex (the format of MROCE_KEY_FILE), " ..
    "or lines \"GEN HEX\" for the keys of several generations (Key Gen): " ..
    "sealed packets are decrypted with the keys derived from it (HKDF, SEC-15), " ..
    "their tag is verified and the packet inside is dissected. Needs lua-luaossl.")

-- Decryption with the key file: mroce_secure.lua, beside this file.
local sec_mod
do
    local src = rawget(_G, "debug") and debug.getinfo(1, "S").source or ""
    local dir = src:match("^@(.*[/\\])") or ""
    local ok, m = pcall(dofile, dir .. "mroce_secure.lua")
    if ok and type(m) == "table" and m.open then sec_mod = m end
end

-- ---------------------------------------------------------------------------
-- Helpers
-- ---------------------------------------------------------------------------

local function flag_names(flags)
    local t = {}
    for _, name in ipairs(FLAG_ORDER) do
        if band(flags, F[name]) ~= 0 then t[#t + 1] = name end
    end
    return table.concat(t, "|")
end

-- "0x..." of a 64-bit big-endian range, without leading zeros.
local function hex64(range)
    local h = tostring(range:uint64():tohex()):gsub("^0+", "")
    return "0x" .. (h == "" and "0" or h)
end

local function opname(op)
    return opcode_names[op] or string.format("0x%02x", op)
end

-- Compresses a sorted list of PSNs into "a,b-c,d"; with max, keeps the
-- first max ranges and counts the rest ("...+N").
local function psn_ranges(list, max)
    local out, i = {}, 1
    while i <= #list do
        if max and #out == max then
            out[#out + 1] = string.format("...(+%d)", #list - i + 1)
            break
        end
        local j = i
        while j < #list and u32(list[j] + 1) == list[j + 1] do j = j + 1 end
        if j == i then
            out[#out + 1] = tostring(list[i])
        else
            out[#out + 1] = list[i] .. "-" .. list[j]
        end
        i = j + 1
    end
    return table.concat(out, ",")
end

local function is_data_opcode(op) return op >= 0x10 and op <= 0x16 end

-- Header length of an opcode (ACK: without its SACK words; CONNECT:
-- without its extensions).  A request with flag STREAM has the STREAM word.
local function hdr_len(op, flags)
    local sw = (band(flags, F.STREAM) ~= 0) and STREAM_LEN or 0
    if op == OP.SEND or op == OP.WRITE or op == OP.READ_REQ then
        return BASE_LEN + REQ_LEN + sw
    elseif op == OP.FETCH_ADD or op == OP.CMP_SWAP then
        return BASE_LEN + REQ_LEN + sw + ATOMIC_LEN
    elseif op == OP.READ_RESP or op == OP.ATOMIC_RESP then
        return BASE_LEN + RESP_LEN
    elseif op == OP.ACK then
        return BASE_LEN + ACK_LEN
    elseif op == OP.NAK then
        return BASE_LEN + NAK_LEN
    elseif op == OP.CONNECT_REQ or op == OP.CONNECT_RESP then
        return BASE_LEN + CONN_LEN
    end
    return BASE_LEN
end

-- Could a MetaRoCE packet start at off, with avail bytes of the datagram
-- left from there?  Used by the heuristic and to recognise coalesced packets.
local function plausible_at(tvb, off, avail)
    if avail < BASE_LEN + CRC_LEN or tvb:len() < off + BASE_LEN then return nil end
    if tvb(off, 1):uint() ~= VERSION then return nil end
    if not opcode_names[tvb(off + 1, 1):uint()] then return nil end
    local pflags = tvb(off + 2, 2):uint()
    local sealed = mroce.prefs.secure and band(pflags, F_SECURE) ~= 0
    if band(pflags, sealed and band(F_RESERVED, 0x7fff) or F_RESERVED) ~= 0 then return nil end
    local plen = tvb(off + 26, 2):uint()
    if sealed and plen < BASE_LEN + SEC_HDR_LEN + SEC_TAG_LEN then return nil end
    if plen < BASE_LEN + CRC_LEN or plen > MAX_PKT_LEN or plen > avail then return nil end
    return plen
end

-- ---------------------------------------------------------------------------
-- One packet
-- ---------------------------------------------------------------------------

--[[
Dissects one MetaRoCE packet at off.  rem is the number of datagram bytes
from off to the end (the reported length: what the packet occupied on the
wire); the captured bytes may be fewer.  coalesced says another packet
follows this one's pkt_len in the same datagram.  Returns the number of bytes
consumed, the Info text and the decode error (nil when valid).
]]
local dissect_packet

local function be32_string(v)
    v = u32(v)
    return string.char(math.floor(v / 16777216) % 256, math.floor(v / 65536) % 256,
        math.floor(v / 256) % 256, v % 256)
end

-- Opens the sealed packet at off with the key file's key and dissects the
-- clear packet inside, under tree, from a new data source.  Returns its
-- Info text, or nil when it cannot be opened.
local function open_sealed(tvb, pinfo, tree, off, plen)
    if not sec_mod then
        tree:add_proto_expert_info(ex.sec_key, "mroce_secure.lua not found beside mroce.lua")
        return nil
    end
    local clear, status, msg = sec_mod.open(mroce.prefs.key_file, tvb:raw(off, plen))
    if status ~= "ok" then
        if status == "bad_tag" then
            tree:add(pf.sec_tag_status, CRC_BAD):set_generated()
            tree:add_proto_expert_info(ex.sec_tag)
            return "[tag bad]"
        end
        tree:add_proto_expert_info(ex.sec_key, "Cannot decrypt: " .. tostring(msg))
        return nil
    end
    tree:add(pf.sec_tag_status, CRC_GOOD):set_generated()
    -- The clear form with its CRC32C, so the codec's checks apply as usual.
    local bytes = clear .. be32_string(crc32c_string(clear))
    local ctvb = ByteArray.new(bytes, true):tvb("Decrypted MetaRoCE")
    tree:add(pf.sec_decrypted, ctvb(0, #clear)):set_generated()
    local _, info = dissect_packet(ctvb, pinfo, tree, 0, #bytes, false, nil)
    return info
end

dissect_packet = function(tvb, pinfo, root, off, rem, coalesced, seg_index)
    local captured = tvb:len() - off
    local in_error = pinfo.in_error_pkt

    if captured < BASE_LEN and rem > captured then
        -- Cut by the capture's snaplen before the base header ends.
        local t = root:add(mroce, tvb(math.min(off, tvb:len()), math.max(0, captured)),
            string.format("MetaRoCE, %d bytes not captured", rem - math.max(0, captured)))
        if seg_index then t:add(pf.segment, seg_index):set_generated() end
        t:add_proto_expert_info(ex.snap)
        return rem, "[not captured]", nil
    end

    -- Pick the packet's extent: pkt_len when it is usable, else the rest.
    local plen
    if rem >= BASE_LEN then plen = tvb(off + 26, 2):uint() end
    local extent = rem
    if plen and plen >= BASE_LEN + CRC_LEN and plen <= MAX_PKT_LEN and plen <= rem then
        extent = plen
    end
    local shown = math.min(extent, captured)

    local tree = root:add(mroce, tvb(off, shown))
    if seg_index then
        tree:add(pf.segment, seg_index):set_generated()
    end

    local err
    local function fail(code, exf, msg, item)
        -- Quoted in an ICMP error: the quote is cut short by ICMP, which is
        -- no fault of the packet; show the fields without judging them.
        if in_error then return end
        if not err then err = code end
        ;(item or tree):add_proto_expert_info(exf, msg)
    end

    -- Were the n bytes at relative offset o captured?
    local function have(o, n) return o + n <= captured end

    -- Step 1: base header.
    if rem < BASE_LEN then
        -- Show the fields that fit.
        local base_fields = {
            { pf.version, 0, 1 }, { pf.opcode, 1, 1 }, { pf.flags, 2, 2 },
            { pf.dst_qpn, 4, 4 }, { pf.token, 8, 8 }, { pf.psn, 16, 4 },
            { pf.tsval, 20, 4 }, { pf.entropy, 24, 2 },
        }
        for _, bf in ipairs(base_fields) do
            if bf[2] + bf[3] <= math.min(rem, captured) then
                tree:add(bf[1], tvb(off + bf[2], bf[3]))
            end
        end
        fail(E.TRUNCATED, ex.truncated,
            string.format("Truncated: %d bytes, shorter than the %d-byte base header", rem, BASE_LEN))
        if err then tree:add(pf.error, err):set_generated() end
        tree:append_text(", truncated")
        return rem, string.format("Truncated datagram (%d bytes)%s", rem,
            err and " [ERROR: TRUNCATED]" or ""), err
    end

    local version = tvb(off, 1):uint()
    local op = tvb(off + 1, 1):uint()
    local flags = tvb(off + 2, 2):uint()
    local psn = tvb(off + 16, 4):uint()

    local vitem = tree:add(pf.version, tvb(off, 1))
    local opitem = tree:add(pf.opcode, tvb(off + 1, 1))
    local fitem = tree:add(pf.flags, tvb(off + 2, 2))
    local fnames = flag_names(flags)
    if fnames ~= "" then fitem:append_text(" (" .. fnames .. ")") end
    fitem:add(pf.flags_first, tvb(off + 2, 2))
    fitem:add(pf.flags_last, tvb(off + 2, 2))
    fitem:add(pf.flags_imm, tvb(off + 2, 2))
    fitem:add(pf.flags_ack_req, tvb(off + 2, 2))
    fitem:add(pf.flags_solicited, tvb(off + 2, 2))
    fitem:add(pf.flags_retx, tvb(off + 2, 2))
    fitem:add(pf.flags_probe, tvb(off + 2, 2))
    fitem:add(pf.flags_credit, tvb(off + 2, 2))
    fitem:add(pf.flags_stream, tvb(off + 2, 2))
    fitem:add(pf.flags_secure, tvb(off + 2, 2))
    fitem:add(pf.flags_reserved, tvb(off + 2, 2))
    tree:add(pf.dst_qpn, tvb(off + 4, 4))
    tree:add(pf.token, tvb(off + 8, 8))
    tree:add(pf.psn, tvb(off + 16, 4))
    tree:add(pf.tsval, tvb(off + 20, 4))
    tree:add(pf.entropy, tvb(off + 24, 2))
    local litem = tree:add(pf.pkt_len, tvb(off + 26, 2))

    local name = opname(op)
    tree:append_text(", " .. name)

    -- Steps 2-3: version and opcode; the rest cannot be laid out.
    local function rest_as_data()
        local n = math.min(rem, captured) - BASE_LEN
        if n > 0 then tree:add(pf.data, tvb(off + BASE_LEN, n)) end
        if err then tree:add(pf.error, err):set_generated() end
    end
    if version ~= VERSION then
        fail(E.VERSION, ex.version, string.format("Unknown version %d (expected %d)", version, VERSION), vitem)
        rest_as_data()
        return rem, string.format("Unknown version %d [ERROR: VERSION]", version), err
    end
    if not opcode_names[op] then
        fail(E.OPCODE, ex.opcode, string.format("Unknown opcode 0x%02x", op), opitem)
        rest_as_data()
        return rem, string.format("Unknown opcode 0x%02x [ERROR: OPCODE]", op), err
    end

    -- A sealed packet (WIRE-38, WIRE-44 steps 1-9): the SEC header in clear,
    -- the rest encrypted (or, with GMAC, in clear but not parsed here), the
    -- tag in place of the CRC.  With a key file (preference key_file) the
    -- packet is opened (mroce_secure.lua) and the packet inside dissected.
    if band(flags, F_SECURE) ~= 0 and mroce.prefs.secure then
        if band(flags, band(F_RESERVED, 0x7fff)) ~= 0 then
            fail(E.FLAGS, ex.flags, string.format("Reserved flag bits set: 0x%04x",
                band(flags, band(F_RESERVED, 0x7fff))), fitem)
        end
        local ok = false
        if plen > MAX_PKT_LEN then
            fail(E.LENGTH, ex.length, string.format("Pkt Len %d exceeds the maximum %d", plen, MAX_PKT_LEN), litem)
        elseif rem < plen then
            fail(E.TRUNCATED, ex.truncated,
                string.format("Truncated: datagram has %d bytes, Pkt Len says %d", rem, plen), litem)
        elseif rem > plen and not coalesced then
            fail(E.LENGTH, ex.length, string.format("Pkt Len %d but the datagram has %d bytes", plen, rem), litem)
        elseif plen < BASE_LEN + SEC_HDR_LEN + SEC_TAG_LEN then
            fail(E.TRUNCATED, ex.truncated,
                string.format("Pkt Len %d leaves no room for SEC header and tag", plen), litem)
        else
            ok = true
        end
        if op == OP.CONNECT_REQ or op == OP.CONNECT_RESP then
            fail(E.FIELD, ex.field, "A CONNECT is never sealed (WIRE-38)", opitem)
        end
        local info = name .. " [sealed]"
        if have(BASE_LEN, SEC_HDR_LEN) and rem >= BASE_LEN + SEC_HDR_LEN then
            local st = tree:add(mroce, tvb(off + BASE_LEN, SEC_HDR_LEN), "SEC header")
            st:add(pf.sec_spi, tvb(off + 28, 4))
            st:add(pf.sec_epoch, tvb(off + 32, 2))
            st:add(pf.sec_suite, tvb(off + 34, 1))
            st:add(pf.sec_key_gen, tvb(off + 35, 1))
            st:add(pf.sec_seq, tvb(off + 36, 8))
            local suite = tvb(off + 34, 1):uint()
            info = string.format("%s [sealed %s, SPI 0x%08x, epoch %d, seq %s]", name,
                suite_names[suite] or "suite ?", tvb(off + 28, 4):uint(),
                tvb(off + 32, 2):uint(), tostring(tvb(off + 36, 8):uint64()))
            if ok then
                local n = plen - BASE_LEN - SEC_HDR_LEN - SEC_TAG_LEN
                local avail = math.min(n, captured - BASE_LEN - SEC_HDR_LEN)
                if avail > 0 then
                    tree:add(suite == 3 and pf.sec_clear or pf.sec_protected,
                        tvb(off + BASE_LEN + SEC_HDR_LEN, avail))
                end
                if have(plen - SEC_TAG_LEN, SEC_TAG_LEN) then
                    tree:add(pf.sec_tag, tvb(off + plen - SEC_TAG_LEN, SEC_TAG_LEN))
                end
                if mroce.prefs.key_file ~= "" and have(0, plen) then
                    local inner = open_sealed(tvb, pinfo, tree, off, plen)
                    if inner then info = info .. " -> " .. inner end
                end
            end
        end
        tree:append_text(", sealed")
        if err then
            tree:add(pf.error, err):set_generated()
            info = info .. string.format(" [ERROR: %s]", error_names[err] or "?")
        end
        return ok and plen or rem, info, err
    end

    -- Step 4: reserved flag bits.
    if band(flags, F_RESERVED) ~= 0 then
        fail(E.FLAGS, ex.flags, string.format("Reserved flag bits set: 0x%04x", band(flags, F_RESERVED)), fitem)
    end

    -- Steps 5-8: pkt_len against the datagram.
    local crc_ok_to_check = false
    if plen > MAX_PKT_LEN then
        fail(E.LENGTH, ex.length, string.format("Pkt Len %d exceeds the maximum %d", plen, MAX_PKT_LEN), litem)
    elseif rem < plen then
        fail(E.TRUNCATED, ex.truncated,
            string.format("Truncated: datagram has %d bytes, Pkt Len says %d", rem, plen), litem)
    elseif rem > plen and not coalesced then
        fail(E.LENGTH, ex.length,
            string.format("Pkt Len %d but the datagram has %d bytes", plen, rem), litem)
    elseif plen < BASE_LEN + CRC_LEN then
        fail(E.TRUNCATED, ex.truncated,
            string.format("Pkt Len %d leaves no room for base header and CRC", plen), litem)
    else
        crc_ok_to_check = true
    end
    -- (rem > plen with plen < 32 falls in the LENGTH branch above, as in the codec.)

    -- Where the headers end and the trailer begins.
    local body_end = extent
    if crc_ok_to_check then
        body_end = extent - CRC_LEN
    elseif plen <= MAX_PKT_LEN and rem < plen then
        body_end = math.min(rem, plen - CRC_LEN) -- bytes missing: CRC lost
    end
    -- Header and field checks (steps 10-11) only make sense once the
    -- packet's extent is known, as in the codec.
    local checks = crc_ok_to_check
    local readable_end = math.min(body_end, captured)

    -- Step 9: CRC.  Checked here, so that a bad CRC is the error reported
    -- before any header or field problem (as in the codec); its items are
    -- added after the payload, where the trailer is.
    local crc_state, crc_trailer, crc_computed = CRC_UNVERIFIED, nil, nil
    local crc_snapped = false
    if crc_ok_to_check then
        if not have(body_end, CRC_LEN) then
            crc_snapped = true
        else
            crc_trailer = tvb(off + body_end, CRC_LEN):uint()
            if mroce.prefs.check_crc then
                crc_computed = crc32c_string(tvb:raw(off, body_end))
                crc_state = (crc_computed == crc_trailer) and CRC_GOOD or CRC_BAD
                if crc_state == CRC_BAD and not in_error and not err then err = E.CRC end
            end
        end
    end

    -- A header subtree over the bytes of [o, o+n) that are readable.
    local function subtree(o, n, title)
        local len = math.min(o + n, readable_end) - o
        if len > 0 then return tree:add(mroce, tvb(off + o, len), title) end
        return tree:add(mroce, tvb(off, 0), title .. " (missing)")
    end
    -- Adds field f at relative offset o if it lies before readable_end.
    local function add(t, f, o, n)
        if o + n <= readable_end then return t:add(f, tvb(off + o, n)) end
        return nil
    end
    local function hdr_truncated(what, need)
        if not checks then return end
        fail(E.TRUNCATED, ex.truncated,
            string.format("Truncated %s: needs %d bytes before the CRC, packet has %d", what, need, body_end))
    end
    local function field_error(msg, item)
        if not checks then return end
        fail(E.FIELD, ex.field, msg, item)
    end
    local function check_segment(msg_len, offset, payload_len, item)
        local finish = offset + payload_len  -- Lua numbers: no 32-bit overflow
        local want = 0
        if finish > msg_len then
            field_error(string.format("Offset %d + payload %d exceeds Msg Len %d", offset, payload_len, msg_len), item)
            return
        end
        if offset == 0 then want = want + F.FIRST end
        if finish == msg_len then want = want + F.LAST end
        local have_fl = band(flags, F.FIRST + F.LAST)
        if have_fl ~= want then
            field_error(string.format("FIRST/LAST flags [%s] do not match offset %d, payload %d, Msg Len %d (want [%s])",
                flag_names(have_fl), offset, payload_len, msg_len, flag_names(want)), fitem)
        end
    end

    -- A bytes field over the readable part of [o, o+n).
    local function add_bytes(t, f, o, n)
        local len = math.min(o + n, readable_end) - o
        if len > 0 then return t:add(f, tvb(off + o, len)) end
        return nil
    end

    --[[
    The CONN extensions from o to body_end, as mrw_pkt_decode() reads them:
    entries of type (1 byte), length (1 byte) and value that exactly fill
    the packet; STREAMS and PLANES at most once each with their fixed
    shapes, other types shown and skipped.  Returns text for the Info column.
    ]]
    local function conn_extensions(o)
        local seen, out = {}, ""
        while o < body_end do
            local left = body_end - o
            if left < 2 then
                field_error(string.format("%d byte after the CONN header: too short for an extension", left))
                add_bytes(tree, pf.extra, o, left)
                break
            end
            if o + 2 > readable_end then break end -- not captured
            local etype = tvb(off + o, 1):uint()
            local vlen = tvb(off + o + 1, 1):uint()
            local ename = ext_type_names[etype]
            local et = subtree(o, math.min(2 + vlen, left),
                ename and ("CONN Extension: " .. ename)
                or string.format("CONN Extension: unknown type %d (skipped)", etype))
            add(et, pf.conn_ext_type, o, 1)
            local litem = add(et, pf.conn_ext_len, o + 1, 1)
            local v = o + 2
            if vlen > left - 2 then
                field_error(string.format("Extension length %d overruns the packet (%d bytes left)",
                    vlen, left - 2), litem)
                add_bytes(et, pf.conn_ext_data, v, left - 2)
                break
            end
            if v + vlen > readable_end then
                add_bytes(et, pf.conn_ext_data, v, vlen)
                break -- not captured
            end
            if etype == EXT_STREAMS then
                if seen[etype] then field_error("Duplicate STREAMS extension", et) end
                if vlen ~= EXT_STREAMS_LEN then
                    field_error(string.format("STREAMS extension of length %d (must be %d)",
                        vlen, EXT_STREAMS_LEN), litem)
                    add_bytes(et, pf.conn_ext_data, v, vlen)
                else
                    local mitem = add(et, pf.conn_max_streams, v, 2)
                    add(et, pf.conn_streams_resvd, v + 2, 2)
                    local ms = tvb(off + v, 2):uint()
                    if ms == 0 then field_error("STREAMS extension with Max Streams 0", mitem) end
                    out = out .. string.format(" max_streams=%d", ms)
                end
            elseif etype == EXT_PLANES then
                if seen[etype] then field_error("Duplicate PLANES extension", et) end
                local cnt = 0
                local citem
                if vlen >= 1 then
                    citem = add(et, pf.conn_nplanes, v, 1)
                    cnt = tvb(off + v, 1):uint()
                end
                if vlen >= 4 then add(et, pf.conn_planes_resvd, v + 1, 3) end
                if vlen < 4 or cnt == 0 or cnt > MAX_PLANES then
                    field_error(string.format("PLANES extension with %d planes (must be 1..%d)",
                        vlen < 4 and 0 or cnt, MAX_PLANES), citem or litem)
                elseif vlen ~= 4 + cnt * EXT_PLANE_LEN then
                    field_error(string.format("PLANES extension of length %d for %d planes (must be %d)",
                        vlen, cnt, 4 + cnt * EXT_PLANE_LEN), litem)
                end
                local i = 0
                while vlen >= 4 and i < cnt and 4 + (i + 1) * EXT_PLANE_LEN <= vlen do
                    local e = v + 4 + i * EXT_PLANE_LEN
                    local pt = et:add(mroce, tvb(off + e, EXT_PLANE_LEN), string.format("Plane %d", i))
                    local aitem = pt:add(pf.conn_plane_addr, tvb(off + e, 16))
                    local mapped = tvb(off + e, 4):uint() == 0 and tvb(off + e + 4, 4):uint() == 0 and
                                   tvb(off + e + 8, 4):uint() == 0xffff
                    local ptext
                    if mapped then
                        local a4 = aitem:add(pf.conn_plane_ipv4, tvb(off + e + 12, 4))
                        ptext = tostring(tvb(off + e + 12, 4):ipv4())
                        a4:append_text(" (IPv4-mapped)")
                    else
                        aitem:add(pf.conn_plane_ipv6, tvb(off + e, 16))
                        ptext = "[" .. tostring(tvb(off + e, 16):ipv6()) .. "]"
                    end
                    local port = tvb(off + e + 16, 2):uint()
                    aitem:append_text(" (" .. ptext .. ")")
                    pt:add(pf.conn_plane_port, tvb(off + e + 16, 2))
                    pt:add(pf.conn_plane_reserved, tvb(off + e + 18, 2))
                    pt:append_text(string.format(": %s:%d", ptext, port))
                    i = i + 1
                end
                out = out .. string.format(" planes=%d", cnt)
            elseif etype == EXT_SACK then
                if seen[etype] then field_error("Duplicate SACK extension", et) end
                if vlen ~= EXT_SACK_LEN then
                    field_error(string.format("SACK extension of length %d (must be %d)",
                        vlen, EXT_SACK_LEN), litem)
                    add_bytes(et, pf.conn_ext_data, v, vlen)
                else
                    local witem = add(et, pf.conn_sack_words, v, 1)
                    add_bytes(et, pf.conn_sack_resvd, v + 1, 3)
                    local w = tvb(off + v, 1):uint()
                    if w <= MAX_SACK_WORDS then
                        field_error(string.format("SACK extension with SACK Words %d (must be 9..255)", w), witem)
                    end
                    out = out .. string.format(" sack_words=%d", w)
                end
            else
                if vlen > 0 then add_bytes(et, pf.conn_ext_data, v, vlen) end
                out = out .. string.format(" ext%d", etype)
            end
            seen[etype] = true
            o = v + vlen
        end
        return out
    end

    local info = name
    if is_data_opcode(op) then info = info .. string.format(" psn=%d", psn) end
    -- An ACK with ACK_REQ asks for an answer: a keepalive (WIRE-28).
    if op == OP.ACK and band(flags, F.ACK_REQ) ~= 0 then
        info = info .. " (keepalive)"
        tree:append_text(" (keepalive)")
    end
    local info_flags = fnames ~= "" and (" [" .. fnames .. "]") or ""
    local payload_len = 0
    local data_only = F.FIRST + F.LAST + F.IMM
    -- Flags a control packet must not carry: those and STREAM (a control
    -- packet belongs to the connection, not to a stream).
    local ctl_bad = data_only + F.STREAM
    local ctl_bad_msg = "FIRST/LAST/IMM/STREAM set on a control packet"

    -- Steps 10-11 by opcode.
    if op == OP.SEND or op == OP.WRITE or op == OP.READ_REQ or op == OP.FETCH_ADD or op == OP.CMP_SWAP then
        local atomic = (op == OP.FETCH_ADD or op == OP.CMP_SWAP)
        local hlen = hdr_len(op, flags)
        local stream = band(flags, F.STREAM) ~= 0
        local sw = stream and STREAM_LEN or 0
        local rt = subtree(BASE_LEN, REQ_LEN, "REQ Header")
        add(rt, pf.req_msn, 28, 4)
        add(rt, pf.req_rsn, 32, 4)
        add(rt, pf.req_raddr, 36, 8)
        add(rt, pf.req_rkey, 44, 4)
        local mitem = add(rt, pf.req_msg_len, 48, 4)
        local oitem = add(rt, pf.req_offset, 52, 4)
        add(rt, pf.req_imm, 56, 4)
        local sitem
        if stream then
            local st = subtree(60, STREAM_LEN, "STREAM Word")
            sitem = add(st, pf.req_stream, 60, 2)
            add(st, pf.req_stream_resvd, 62, 2)
        end
        local ao = 60 + sw -- the ATOMIC header follows the STREAM word
        if atomic then
            local at = subtree(ao, ATOMIC_LEN, "ATOMIC Header")
            add(at, pf.atomic_swap_add, ao, 8)
            add(at, pf.atomic_compare, ao + 8, 8)
        end
        payload_len = math.max(0, body_end - hlen)
        if body_end < hlen then
            local what = atomic and "REQ/ATOMIC header" or "REQ header"
            if stream then what = atomic and "REQ/STREAM/ATOMIC header" or "REQ/STREAM header" end
            hdr_truncated(what, hlen)
        elseif readable_end >= hlen then
            local msn = tvb(off + 28, 4):uint()
            local msg_len = tvb(off + 48, 4):uint()
            local offset = tvb(off + 52, 4):uint()
            local imm = tvb(off + 56, 4):uint()
            local sinfo = ""
            if stream then
                local sid = tvb(off + 60, 2):uint()
                -- Stream 0 has exactly one encoding: no STREAM word.
                if sid == 0 then field_error("STREAM word with Stream ID 0", sitem) end
                sinfo = string.format(" stream=%d", sid)
            end
            info = info .. sinfo
            if op == OP.SEND or op == OP.WRITE then
                check_segment(msg_len, offset, payload_len, oitem)
                info = info .. string.format(" msn=%d off=%d len=%d", msn, offset, payload_len)
                if band(flags, F.IMM) ~= 0 then info = info .. string.format(" imm=0x%08x", imm) end
            else
                if band(flags, F.IMM) ~= 0 then
                    field_error("IMM is valid only on SEND and WRITE", fitem)
                end
                if payload_len ~= 0 then
                    field_error(string.format("%s carries %d payload bytes (none allowed)", name, payload_len))
                end
                if offset ~= 0 then
                    field_error(string.format("%s with Offset %d (must be 0)", name, offset), oitem)
                end
                if band(flags, F.FIRST + F.LAST) ~= F.FIRST + F.LAST then
                    field_error(string.format("%s must have FIRST and LAST set", name), fitem)
                end
                if atomic and msg_len ~= ATOMIC_VAL_LEN then
                    field_error(string.format("%s with Msg Len %d (must be 8)", name, msg_len), mitem)
                end
                if op == OP.READ_REQ then
                    info = info .. string.format(" msn=%d len=%d", msn, msg_len)
                elseif op == OP.FETCH_ADD then
                    info = info .. string.format(" msn=%d add=%s", msn, hex64(tvb(off + ao, 8)))
                else
                    info = info .. string.format(" msn=%d cmp=%s swap=%s", msn,
                        hex64(tvb(off + ao + 8, 8)), hex64(tvb(off + ao, 8)))
                end
            end
        end
    elseif op == OP.READ_RESP or op == OP.ATOMIC_RESP then
        local hlen = hdr_len(op, flags)
        local rt = subtree(BASE_LEN, RESP_LEN, "RESP Header")
        add(rt, pf.resp_req_msn, 28, 4)
        local mitem = add(rt, pf.resp_msg_len, 32, 4)
        local oitem = add(rt, pf.resp_offset, 36, 4)
        add(rt, pf.resp_stream, 40, 2)
        add(rt, pf.resp_reserved, 42, 2)
        payload_len = math.max(0, body_end - hlen)
        if body_end < hlen then
            hdr_truncated("RESP header", hlen)
        elseif readable_end >= hlen then
            local req_msn = tvb(off + 28, 4):uint()
            local msg_len = tvb(off + 32, 4):uint()
            local offset = tvb(off + 36, 4):uint()
            local rstream = tvb(off + 40, 2):uint()
            if band(flags, F.IMM) ~= 0 then
                field_error("IMM is valid only on SEND and WRITE", fitem)
            elseif band(flags, F.STREAM) ~= 0 then
                field_error("STREAM is valid only on requests (a response names its stream in its RESP header)", fitem)
            elseif op == OP.ATOMIC_RESP and (payload_len ~= ATOMIC_VAL_LEN or msg_len ~= ATOMIC_VAL_LEN or offset ~= 0) then
                field_error(string.format("ATOMIC_RESP must carry exactly 8 bytes at offset 0 with Msg Len 8 (payload %d, Msg Len %d, Offset %d)",
                    payload_len, msg_len, offset), mitem)
            else
                check_segment(msg_len, offset, payload_len, oitem)
            end
            if rstream ~= 0 then info = info .. string.format(" stream=%d", rstream) end
            info = info .. string.format(" req_msn=%d off=%d len=%d", req_msn, offset, payload_len)
            if op == OP.ATOMIC_RESP and payload_len == ATOMIC_VAL_LEN and readable_end >= hlen + 8 then
                info = info .. " orig=" .. hex64(tvb(off + hlen, 8))
            end
        end
    elseif op == OP.ACK then
        local hlen = BASE_LEN + ACK_LEN
        local at = subtree(BASE_LEN, ACK_LEN, "ACK Header")
        add(at, pf.ack_cum_psn, 28, 4)
        add(at, pf.ack_echo_psn, 32, 4)
        add(at, pf.ack_echo_ts, 36, 4)
        add(at, pf.ack_echo_entropy, 40, 2)
        local eitem = add(at, pf.ack_echo_flags, 42, 1)
        if eitem then
            local ef = tvb(off + 42, 1):uint()
            local names = {}
            if band(ef, ECHO_CE) ~= 0 then names[#names + 1] = "CE" end
            if band(ef, ECHO_DUP) ~= 0 then names[#names + 1] = "DUP" end
            if #names > 0 then eitem:append_text(" (" .. table.concat(names, "|") .. ")") end
            eitem:add(pf.ack_echo_ce, tvb(off + 42, 1))
            eitem:add(pf.ack_echo_dup, tvb(off + 42, 1))
            eitem:add(pf.ack_echo_reserved, tvb(off + 42, 1))
        end
        local witem = add(at, pf.ack_sack_words, 43, 1)
        add(at, pf.ack_ce_count, 44, 4)
        add(at, pf.ack_rx_count, 48, 4)
        add(at, pf.ack_credit, 52, 4)
        add(at, pf.ack_ack_delay, 56, 4)
        if body_end < hlen then
            hdr_truncated("ACK header", hlen)
        elseif readable_end >= hlen then
            local cum = tvb(off + 28, 4):uint()
            local echo_psn = tvb(off + 32, 4):uint()
            local ef = tvb(off + 42, 1):uint()
            local words = tvb(off + 43, 1):uint()
            local credit = tvb(off + 52, 4):uint()
            if band(flags, ctl_bad) ~= 0 then
                field_error(ctl_bad_msg, fitem)
            end
            if band(ef, 0xff - ECHO_KNOWN) ~= 0 then
                field_error(string.format("Unknown echo flag bits 0x%02x", band(ef, 0xff - ECHO_KNOWN)), eitem)
            end
            -- More than 8 words: valid where the SACK extension is in
            -- effect (WIRE-53); the connection, not the packet, says so.
            if words > MAX_SACK_WORDS and witem then
                witem:append_text(" (beyond 8: SACK extension, WIRE-52)")
            end
            local sacked = {}
            local st = at
            for j = 0, words - 1 do
                local o = hlen + 4 * j
                if o + 4 > readable_end then break end
                st:add(pf.ack_sack, tvb(off + o, 4)):append_text(string.format(" (PSNs %d..%d)",
                    u32(cum + 1 + 32 * j), u32(cum + 32 + 32 * j)))
                local w = tvb(off + o, 4):uint()
                for i = 0, 31 do
                    if band(w, lshift(1, i)) ~= 0 then
                        sacked[#sacked + 1] = u32(cum + 1 + 32 * j + i)
                    end
                end
            end
            local full = hlen + 4 * words
            if body_end < full then
                hdr_truncated(string.format("ACK (%d SACK words)", words), full)
            elseif body_end > full then
                field_error(string.format("%d unexpected bytes after the ACK header", body_end - full))
                add(tree, pf.extra, full, body_end - full)
            end
            if words > 0 then
                local list = psn_ranges(sacked)
                local lt = at:add(pf.ack_sacked_count, #sacked)
                lt:set_generated()
                lt:add(pf.ack_sack_list, list):set_generated()
                for _, p in ipairs(sacked) do
                    lt:add(pf.ack_sacked_psn, p):set_generated()
                end
                info = info .. string.format(" cum=%d echo=%d sack=%s", cum, echo_psn,
                    list ~= "" and psn_ranges(sacked, 6) or "-")
            else
                info = info .. string.format(" cum=%d echo=%d", cum, echo_psn)
            end
            if band(ef, ECHO_CE) ~= 0 then info = info .. " CE" end
            if band(ef, ECHO_DUP) ~= 0 then info = info .. " DUP" end
            if credit ~= CREDIT_UNLIMITED then info = info .. string.format(" credit=%d", credit) end
        end
    elseif op == OP.NAK then
        local hlen = BASE_LEN + NAK_LEN
        local nt = subtree(BASE_LEN, NAK_LEN, "NAK Header")
        add(nt, pf.nak_nak_psn, 28, 4)
        add(nt, pf.nak_msn, 32, 4)
        local citem = add(nt, pf.nak_code, 36, 1)
        local ritem = add(nt, pf.nak_rnr_delay, 37, 1)
        add(nt, pf.nak_stream, 38, 2)
        add(nt, pf.nak_cum_psn, 40, 4)
        if body_end < hlen then
            hdr_truncated("NAK header", hlen)
        elseif readable_end >= hlen then
            local nak_psn = tvb(off + 28, 4):uint()
            local code = tvb(off + 36, 1):uint()
            local delay = tvb(off + 37, 1):uint()
            local cum = tvb(off + 40, 4):uint()
            if ritem and code == 0x01 then ritem:append_text(string.format(" (%d us)", delay * 10)) end
            if body_end ~= hlen then
                field_error(string.format("%d unexpected bytes after the NAK header", body_end - hlen))
                add(tree, pf.extra, hlen, body_end - hlen)
            end
            if band(flags, ctl_bad) ~= 0 then
                field_error(ctl_bad_msg, fitem)
            end
            local cname = nak_code_names[code]
            if not cname then
                field_error(string.format("Unknown NAK code 0x%02x", code), citem)
                cname = string.format("0x%02x", code)
            elseif not in_error then
                citem:add_proto_expert_info(ex.nak, "NAK " .. cname)
            end
            info = info .. string.format(" %s psn=%d cum=%d", cname, nak_psn, cum)
            local nstream = tvb(off + 38, 2):uint()
            if nstream ~= 0 then info = info .. string.format(" stream=%d", nstream) end
            if code == 0x01 then info = info .. string.format(" delay=%dus", delay * 10) end
        end
    elseif op == OP.CONNECT_REQ or op == OP.CONNECT_RESP then
        local hlen = BASE_LEN + CONN_LEN
        local ct = subtree(BASE_LEN, CONN_LEN, "CONN Header")
        add(ct, pf.conn_src_qpn, 28, 4)
        add(ct, pf.conn_start_psn, 32, 4)
        add(ct, pf.conn_token, 36, 8)
        local mitem = add(ct, pf.conn_mtu, 44, 2)
        add(ct, pf.conn_npaths, 46, 2)
        add(ct, pf.conn_rx_window, 48, 4)
        add(ct, pf.conn_max_rd_atomic, 52, 4)
        local cfitem = add(ct, pf.conn_flags, 56, 4)
        if cfitem then
            cfitem:add(pf.conn_flags_credit, tvb(off + 56, 4))
            cfitem:add(pf.conn_flags_rate, tvb(off + 56, 4))
        end
        add(ct, pf.conn_max_ack_delay, 60, 4)
        if body_end < hlen then
            hdr_truncated("CONN header", hlen)
        elseif readable_end >= hlen then
            local mtu = tvb(off + 44, 2):uint()
            local cflags = tvb(off + 56, 4):uint()
            if band(flags, ctl_bad) ~= 0 then
                field_error(ctl_bad_msg, fitem)
            end
            if mtu < MIN_MTU then
                field_error(string.format("MTU %d below the minimum %d", mtu, MIN_MTU), mitem)
            end
            info = info .. string.format(" qpn=%d start_psn=%d mtu=%d npaths=%d window=%d",
                tvb(off + 28, 4):uint(), tvb(off + 32, 4):uint(), mtu,
                tvb(off + 46, 2):uint(), tvb(off + 48, 4):uint())
            if band(cflags, CONN_F_CREDIT) ~= 0 then info = info .. " CREDIT" end
            if band(cflags, CONN_F_RATE) ~= 0 then info = info .. " RATE" end
            info = info .. conn_extensions(hlen)
        end
    else -- DISCONNECT, DISCONNECT_ACK
        if body_end ~= BASE_LEN and crc_ok_to_check then
            field_error(string.format("%d unexpected bytes after the base header", body_end - BASE_LEN))
            add(tree, pf.extra, BASE_LEN, body_end - BASE_LEN)
        end
        if band(flags, ctl_bad) ~= 0 then
            field_error(ctl_bad_msg, fitem)
        end
        info = info .. string.format(" qpn=%d", tvb(off + 4, 4):uint())
    end

    -- Payload (data opcodes).
    if is_data_opcode(op) then
        local hlen = hdr_len(op, flags)
        if payload_len > 0 then
            add(tree, pf.payload, hlen, payload_len)
        end
        if body_end >= hlen then
            tree:add(pf.payload_len, payload_len):set_generated()
        end
    else
        tree:add(pf.payload_len, 0):set_generated()
    end

    -- CRC32C trailer.
    if crc_trailer then
        local citem = tree:add(pf.crc, tvb(off + body_end, CRC_LEN))
        if crc_computed then
            tree:add(pf.crc_computed, crc_computed):set_generated()
        end
        if crc_state == CRC_GOOD then
            citem:append_text(" [correct]")
        elseif crc_state == CRC_BAD then
            citem:append_text(string.format(" [incorrect, should be 0x%08x]", crc_computed))
            if not in_error then
                citem:add_proto_expert_info(ex.bad_crc,
                    string.format("Bad CRC32C: trailer 0x%08x, computed 0x%08x", crc_trailer, crc_computed))
            end
        end
    end
    tree:add(pf.crc_status, crc_state):set_generated()
    if crc_snapped then tree:add_proto_expert_info(ex.snap) end

    -- Bytes after pkt_len that are not another packet.
    if plen and plen >= BASE_LEN and plen < rem and extent == plen and not coalesced then
        local n = math.min(rem, captured) - plen
        if n > 0 then tree:add(pf.trailing, tvb(off + plen, n)) end
    end

    if band(flags, F.RETX) ~= 0 and not in_error then
        tree:add_proto_expert_info(ex.retx)
    end

    info = info .. info_flags
    if err then
        tree:add(pf.error, err):set_generated()
        tree:append_text(", " .. error_names[err])
        info = info .. " [ERROR: " .. error_names[err] .. "]"
    end
    tree:append_text(string.format(", PSN %d, Len %d", psn, plen))
    local consumed = extent
    if not coalesced then consumed = rem end
    return consumed, info, err
end

-- ---------------------------------------------------------------------------
-- Datagram
-- ---------------------------------------------------------------------------

function mroce.dissector(tvb, pinfo, tree)
    local total = tvb:reported_len()
    pinfo.cols.protocol = "MetaRoCE"

    local infos = {}
    local off, seg = 0, 0
    local multi = false
    -- Coalesced (GSO/GRO) datagrams: packets back to back, each its pkt_len.
    local chain = {}
    local snapped_tail
    if mroce.prefs.split_coalesced then
        local o = 0
        while o < total do
            if #chain > 0 and tvb:len() < o + BASE_LEN and tvb:len() < total and
               total - o >= BASE_LEN + CRC_LEN then
                chain[#chain + 1] = total - o -- not captured (snaplen)
                snapped_tail = total - o
                break
            end
            local plen = plausible_at(tvb, o, total - o)
            if not plen then break end
            chain[#chain + 1] = plen
            o = o + plen
        end
        multi = #chain > 1
    end

    local ptree = tree
    if multi then
        ptree = tree:add(mroce, tvb(), string.format("MetaRoCE coalesced datagram: %d packets", #chain))
        ptree:add(pf.segments, #chain):set_generated()
        if not pinfo.in_error_pkt then
            ptree:add_proto_expert_info(ex.coalesced,
                string.format("%d MetaRoCE packets in one datagram (GSO/GRO)", #chain))
        end
    end

    repeat
        seg = seg + 1
        local rem = total - off
        -- A packet is "coalesced" when a plausible packet follows it.
        local coalesced = multi and seg < #chain
        local used, info = dissect_packet(tvb, pinfo, ptree, off, rem, coalesced,
                                          multi and seg or nil)
        infos[#infos + 1] = info
        off = off + used
    until off >= total or seg >= 4096

    local text = table.concat(infos, " ; ")
    if multi and snapped_tail then
        text = string.format("[%d pkts + %d bytes not captured] ", #chain - 1, snapped_tail) .. text
    elseif multi then
        text = string.format("[%d pkts] ", #chain) .. text
    end
    pinfo.cols.info = text
    return total
end

-- ---------------------------------------------------------------------------
-- Registration
-- ---------------------------------------------------------------------------

local udp_table = DissectorTable.get("udp.port")
local current_port = mroce.prefs.udp_port
udp_table:add(current_port, mroce)
if udp_table.add_for_decode_as then
    udp_table:add_for_decode_as(mroce)
end

function mroce.prefs_changed()
    local port = mroce.prefs.udp_port
    if port ~= current_port then
        if current_port ~= 0 then udp_table:remove(current_port, mroce) end
        if port ~= 0 then udp_table:add(port, mroce) end
        current_port = port
    end
end

-- Heuristic: version 1, known opcode, no reserved flag, and pkt_len values
-- that tile the datagram exactly (one packet, or coalesced packets).
local function heuristic(tvb, pinfo, tree)
    local total = tvb:reported_len()
    if total < BASE_LEN + CRC_LEN or tvb:len() < BASE_LEN then return false end
    local o, n = 0, 0
    while o < total do
        local plen = plausible_at(tvb, o, total - o)
        if not plen then return false end
        if n == 1 and not mroce.prefs.split_coalesced then return false end
        o, n = o + plen, n + 1
        if o < total and tvb:len() < o + BASE_LEN and tvb:len() < total and
           total - o >= BASE_LEN + CRC_LEN then
            o = total -- the rest was not captured (snaplen): trust the first
        end
    end
    if o ~= total then return false end
    mroce.dissector(tvb, pinfo, tree)
    return true
end
mroce:register_heuristic("udp", heuristic)

-- Wireshark's UDP dissector hands a zero-length payload to no subdissector,
-- so an empty datagram on the MetaRoCE port (TRUNCATED for the codec) would
-- go unnoticed.  This small post-dissector flags it with the MetaRoCE fields.
local mroce_empty = Proto("mroce_empty", "MetaRoCE empty-datagram check")
local f_udp_len = Field.new("udp.length")
local f_udp_srcport = Field.new("udp.srcport")
local f_udp_dstport = Field.new("udp.dstport")
local f_icmp = Field.new("icmp")
local f_icmpv6 = Field.new("icmpv6")

function mroce_empty.dissector(tvb, pinfo, tree)
    local lens = { f_udp_len() }
    if #lens ~= 1 or lens[1].value ~= 8 or f_icmp() or f_icmpv6() then return end
    local sport, dport = f_udp_srcport(), f_udp_dstport()
    if not (sport and dport) or current_port == 0 or
       (sport.value ~= current_port and dport.value ~= current_port) then
        return
    end
    local t = tree:add(mroce, lens[1].range, "MetaRoCE, zero-length datagram")
    t:add(pf.error, E.TRUNCATED):set_generated()
    t:add_proto_expert_info(ex.truncated, "Truncated: zero-length datagram, shorter than the 28-byte base header")
    pinfo.cols.protocol = "MetaRoCE"
    pinfo.cols.info = "Truncated datagram (0 bytes) [ERROR: TRUNCATED]"
end
register_postdissector(mroce_empty)
