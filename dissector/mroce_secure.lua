--[[
mroce_secure.lua - decryption of secure-mode packets for mroce.lua, with a
master key file, as Wireshark decrypts TLS or ESP with a key log or an SA
table (docs/spec/security.md section 6, wire-format.md section 8).

mroce.lua loads this file from its own folder; on its own (copied among
Wireshark's plugins) it defines nothing.  It returns a table with
    open(key_file, sealed) -> clear, status, message
where sealed is one sealed packet's bytes (a Lua string) and clear is the
packet it seals, as a receiver opens it: base header without the SECURE
flag and with the clear Pkt Len, the opened headers and payload, and a
CRC32C trailer filled in by the caller's codec.

The AES and HKDF come from OpenSSL through luaossl (Debian lua-luaossl):
the packet key is HKDF-SHA256 of the master key with SEC-15's info, the
keystream is AES-CTR from the nonce's counter block 2 (SP 800-38D; block
1 masks the tag).  luaossl has no call for GCM's additional data, so the
tag is checked with the GHASH below, the one piece not from OpenSSL: it
only decides what the dissector shows, never protects anything.
]]

local M = {}

local ok_c, cipher = pcall(require, "openssl.cipher")
local ok_k, kdf = pcall(require, "openssl.kdf")
M.available = ok_c and ok_k
if not M.available then
    M.why = "luaossl (lua-luaossl) is not installed for this Lua"
end

local bit = rawget(_G, "bit32") or rawget(_G, "bit")
local band, bxor, rshift, lshift
if bit then
    band, bxor, rshift, lshift = bit.band, bit.bxor, bit.rshift, bit.lshift
else
    band, bxor, rshift, lshift = load([[
        return function(a, b) return a & b end,
               function(a, b) return a ~ b end,
               function(a, n) return (a & 0xffffffff) >> n end,
               function(a, n) return (a << n) & 0xffffffff end
    ]])()
end

local SALT = "MetaRoCE v1"
local LABEL = "mroce packet"
local BASE_LEN, SEC_LEN, TAG_LEN, CRC_LEN = 28, 16, 16, 4
local AAD_LEN = BASE_LEN + SEC_LEN
local SUITE_KEY_LEN = { [1] = 16, [2] = 32, [3] = 16 }

-- The master keys of a key file, by generation (SEC-31): 32 to 128 hex
-- digits (MROCE_KEY_FILE's format, generation 0), or one line "GEN HEX"
-- per generation; read again when the path changes.
local cache = { path = nil }
local function masters(path)
    if cache.path == path then return cache.gens, cache.err end
    cache = { path = path, keys = {}, gens = {} }
    local f, e = io.open(path, "r")
    if not f then
        cache.gens, cache.err = nil, "key file: " .. tostring(e)
        return nil, cache.err
    end
    local s = f:read("*a") or ""
    f:close()
    local n = 0
    for line in s:gmatch("[^\n]+") do
        local gen, hex = line:match("^%s*(%d+)%s+(%x+)%s*$")
        if not gen then hex = line:match("^%s*(%x+)%s*$") end
        if hex then
            if #hex % 2 ~= 0 or #hex < 32 or #hex > 128 or tonumber(gen or 0) > 255 then
                cache.gens, cache.err = nil, "key file " .. path ..
                    ": want 32 to 128 hex digits, or GEN HEX lines"
                return nil, cache.err
            end
            cache.gens[tonumber(gen or 0)] =
                (hex:gsub("%x%x", function(h) return string.char(tonumber(h, 16)) end))
            n = n + 1
        elseif line:match("%S") then
            cache.gens, cache.err = nil, "key file " .. path .. ": unreadable line"
            return nil, cache.err
        end
    end
    if n == 0 then
        cache.gens, cache.err = nil, "key file " .. path .. ": no key"
        return nil, cache.err
    end
    return cache.gens
end

-- SEC-15's packet key for the info of the packet, kept per info.
local function packet_key(mk, gen, suite, info)
    local id = string.char(gen) .. info
    local k = cache.keys[id]
    if not k then
        k = kdf.derive({ type = "HKDF", md = "sha256", salt = SALT, key = mk,
                         info = info, outlen = SUITE_KEY_LEN[suite] })
        cache.keys[id] = k
    end
    return k
end

local function words(s, i)
    local a, b, c, d = s:byte(i, i + 3)
    return ((a * 256 + b) * 256 + c) * 256 + d
end

-- GHASH (SP 800-38D 6.4) of data, a multiple of 16 bytes, under H: the
-- bitwise multiplication in GF(2^128), MSB first.
local function ghash(h, data)
    local h0, h1, h2, h3 = words(h, 1), words(h, 5), words(h, 9), words(h, 13)
    local y0, y1, y2, y3 = 0, 0, 0, 0
    for i = 1, #data, 16 do
        local x = { bxor(y0, words(data, i)), bxor(y1, words(data, i + 4)),
                    bxor(y2, words(data, i + 8)), bxor(y3, words(data, i + 12)) }
        local z0, z1, z2, z3 = 0, 0, 0, 0
        local v0, v1, v2, v3 = h0, h1, h2, h3
        for w = 1, 4 do
            local xw = x[w]
            for b = 31, 0, -1 do
                if band(rshift(xw, b), 1) ~= 0 then
                    z0, z1, z2, z3 = bxor(z0, v0), bxor(z1, v1), bxor(z2, v2), bxor(z3, v3)
                end
                local lsb = band(v3, 1)
                v3 = bxor(rshift(v3, 1), lshift(band(v2, 1), 31))
                v2 = bxor(rshift(v2, 1), lshift(band(v1, 1), 31))
                v1 = bxor(rshift(v1, 1), lshift(band(v0, 1), 31))
                v0 = rshift(v0, 1)
                if lsb ~= 0 then v0 = bxor(v0, 0xe1000000) end
            end
        end
        y0, y1, y2, y3 = z0, z1, z2, z3
    end
    local out = {}
    for _, w in ipairs({ y0, y1, y2, y3 }) do
        w = w % 4294967296
        out[#out + 1] = string.char(math.floor(w / 16777216) % 256,
            math.floor(w / 65536) % 256, math.floor(w / 256) % 256, w % 256)
    end
    return table.concat(out)
end

local function pad16(s)
    local r = #s % 16
    return r == 0 and s or s .. string.rep("\0", 16 - r)
end

local function be32(v)
    return string.char(math.floor(v / 16777216) % 256, math.floor(v / 65536) % 256,
        math.floor(v / 256) % 256, v % 256)
end

local function sxor(a, b)
    local t = {}
    for i = 1, #a do t[i] = string.char(bxor(a:byte(i), b:byte(i))) end
    return table.concat(t)
end

-- status: "ok", "bad_tag", "no_key" (message says why), "suite".
function M.open(path, sealed)
    if not M.available then return nil, "no_key", M.why end
    local gens, err = masters(path)
    if not gens then return nil, "no_key", err end
    local gen = sealed:byte(36)
    local mk = gens[gen]
    if not mk then
        return nil, "no_key", string.format("no key of generation %d in the key file", gen)
    end
    local suite = sealed:byte(35)
    if not SUITE_KEY_LEN[suite] then return nil, "suite", "reserved suite" end
    -- SEC-15: label, suite, Dst QPN, Token, SPI, Epoch of the packet.
    local info = LABEL .. string.char(suite) .. sealed:sub(5, 16) ..
                 sealed:sub(29, 32) .. sealed:sub(33, 34)
    local ok, k = pcall(packet_key, mk, gen, suite, info)
    if not ok or not k then return nil, "no_key", "HKDF failed: " .. tostring(k) end
    local nonce = sealed:sub(29, 32) .. sealed:sub(37, 44)
    local n = #sealed - AAD_LEN - TAG_LEN
    local body = sealed:sub(AAD_LEN + 1, AAD_LEN + n)
    local tag = sealed:sub(-TAG_LEN)
    local ctr = cipher.new(suite == 2 and "aes-256-ctr" or "aes-128-ctr")
    -- Block 1 of the nonce's counter masks the tag; blocks 2.. encrypt.
    local ks = ctr:encrypt(k, nonce .. "\0\0\0\1"):final(string.rep("\0", 16) ..
        (suite == 3 and "" or body))
    local hkey = cipher.new(suite == 2 and "aes-256-ctr" or "aes-128-ctr")
        :encrypt(k, string.rep("\0", 16)):final(string.rep("\0", 16))
    local aad, ct, clear_body
    if suite == 3 then -- GMAC: the whole packet is additional data
        aad, ct, clear_body = sealed:sub(1, AAD_LEN + n), "", body
    else
        aad, ct, clear_body = sealed:sub(1, AAD_LEN), body, ks:sub(17)
    end
    local lens = be32(0) .. be32(#aad * 8) .. be32(0) .. be32(#ct * 8)
    local want = sxor(ghash(hkey, pad16(aad) .. pad16(ct) .. lens), ks:sub(1, 16))
    if want ~= tag then
        return nil, "bad_tag", "tag does not verify under the key file's key"
    end
    -- The clear packet (as secure.c's mre_sec_open builds it).
    local clen = #sealed - (SEC_LEN + TAG_LEN - CRC_LEN)
    local flags = sealed:byte(3) % 128 -- SECURE (0x8000) cleared
    local clear = sealed:sub(1, 2) .. string.char(flags) .. sealed:sub(4, 26) ..
                  string.char(math.floor(clen / 256), clen % 256) .. clear_body
    return clear, "ok"
end

return M
