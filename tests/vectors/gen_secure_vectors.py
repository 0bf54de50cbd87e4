#!/usr/bin/env python3
"""gen_secure_vectors.py - write tests/vectors/secure_vectors.txt.

Secure-mode test vectors (docs/spec/wire-format.md WIRE-45) computed with
OpenSSL's libcrypto through pyca/cryptography (Debian python3-cryptography),
independently of the reference implementation's C code: the HKDF-SHA256
derivations of security.md SEC-13..SEC-15, sealed packets of every suite
(WIRE-39..WIRE-42) and a CONNECT_REQ with its SECURE extension (WIRE-43).
test_lib_secure_vectors checks libmroce against them.

Usage: python3 tests/vectors/gen_secure_vectors.py > tests/vectors/secure_vectors.txt
"""
import struct
import sys

from cryptography.hazmat.primitives import hashes, hmac
from cryptography.hazmat.primitives.ciphers.aead import AESGCM
from cryptography.hazmat.primitives.kdf.hkdf import HKDF

MASTER = bytes(range(0x40, 0x60))  # 32 bytes
SALT = b"MetaRoCE v1"


def hkdf(info, length):
    return HKDF(algorithm=hashes.SHA256(), length=length, salt=SALT,
                info=info).derive(MASTER)


def crc32c(data):
    crc = 0xFFFFFFFF
    for b in data:
        crc ^= b
        for _ in range(8):
            crc = (crc >> 1) ^ 0x82F63B78 if crc & 1 else crc >> 1
    return crc ^ 0xFFFFFFFF


def hexlines(b):
    return ["hex: " + " ".join("%02x" % x for x in b[i:i + 16])
            for i in range(0, len(b), 16)]


# The example SEND of wire-format.md 6.1 ("ABCD" to QPN 0x11, token
# 0x0123456789ABCDEF), without its CRC.
CLEAR = bytes.fromhex(
    "0110000b000000110123456789abcdef000010000badcafec0000044"
    "00000000000000000000000000000000000000000000000400000000"
    "0000000041424344")
QPN, TOKEN, SPI, EPOCH, SEQ = 0x11, 0x0123456789ABCDEF, 0x5eed0001, 0, 1


def sealed(suite):
    klen = 32 if suite == 2 else 16
    info = (b"mroce packet" + bytes([suite]) +
            struct.pack(">IQIH", QPN, TOKEN, SPI, EPOCH))
    key = hkdf(info, klen)
    body = CLEAR[28:]
    total = len(CLEAR) + 4 + 28
    base = bytearray(CLEAR[:28])
    base[2] |= 0x80
    base[26:28] = struct.pack(">H", total)
    sec = struct.pack(">IHBBQ", SPI, EPOCH, suite, 0, SEQ)
    aad = bytes(base) + sec
    nonce = struct.pack(">IQ", SPI, SEQ)
    if suite == 3:
        out = AESGCM(key).encrypt(nonce, b"", aad + body)
        pkt = aad + body + out
    else:
        pkt = aad + AESGCM(key).encrypt(nonce, body, aad)
    assert len(pkt) == total
    return info, key, pkt


def connect_req():
    # CONNECT_REQ (Src QPN 0x21, token 0x1122334455667788, start PSN
    # 0x1000, MTU 4096, 64 paths, window 1024, 16 RD, no flags, ack delay
    # 10000) with SECURE (suite 1, SPI 0x5eed0002) as its only extension.
    k_hs = hkdf(b"mroce handshake", 32)
    conn = struct.pack(">IIQHHIIII", 0x21, 0x1000, 0x1122334455667788, 4096,
                       64, 1024, 16, 0, 10000)
    ext_head = bytes([3, 24, 1, 0, 0, 0]) + struct.pack(">I", 0x5eed0002)
    total = 28 + 36 + 26 + 4
    base = struct.pack(">BBHIQIIHH", 1, 0x30, 0, 0, 0, 0x1000, 0x100, 0xC005,
                       total)
    msg = base + conn + ext_head
    h = hmac.HMAC(k_hs, hashes.SHA256())
    h.update(msg)
    mac = h.finalize()[:16]
    body = msg + mac
    return k_hs, body + struct.pack(">I", crc32c(body))


def main():
    w = sys.stdout.write
    w("# secure_vectors.txt - secure-mode test vectors (WIRE-45), written by\n"
      "# tests/vectors/gen_secure_vectors.py with OpenSSL (pyca/cryptography);\n"
      "# checked by tests/test_lib_secure_vectors.c.  Do not edit by hand.\n"
      "#\n"
      "# master: the master key.  Per vector: suite, the key's derivation\n"
      "# fields (qpn, token, spi, epoch), seq, the HKDF info and key, the\n"
      "# clear packet without its CRC (clear:), and the sealed packet (hex:).\n"
      "# The connect vector: the handshake key and a CONNECT_REQ whose\n"
      "# SECURE extension carries its MAC.\n\n")
    w("master: %s\n\n" % MASTER.hex())
    for suite, name in ((1, "aes128gcm"), (2, "aes256gcm"), (3, "gmac")):
        info, key, pkt = sealed(suite)
        w("name: send_%s\n" % name)
        w("suite: %d\nqpn: 0x%x\ntoken: 0x%016x\nspi: 0x%08x\nepoch: %d\n"
          "seq: %d\n" % (suite, QPN, TOKEN, SPI, EPOCH, SEQ))
        w("info: %s\nkey: %s\n" % (info.hex(), key.hex()))
        w("clear: %s\n" % CLEAR.hex())
        w("\n".join(hexlines(pkt)) + "\n\n")
    k_hs, pkt = connect_req()
    w("name: connect_req_secure\n")
    w("k_hs: %s\nspi: 0x5eed0002\nsuite: 1\n" % k_hs.hex())
    w("\n".join(hexlines(pkt)) + "\n")


main()
