#!/bin/sh
# test_dpdk_veth.sh - the DPDK datapath and the kernel-socket datapath on
# one wire.  Two network namespaces joined by a veth pair: in one,
# mroce-perf runs over DPDK's net_af_packet on its veth end (no address
# on the interface: DPDK answers ARP and Neighbor Solicitations itself);
# in the other, mroce-perf runs over kernel UDP sockets on the peer end.
# WRITE, SEND and READ complete with every byte verified, DPDK as client
# and as server, without loss and with 1% drops and reordering, over IPv4
# with ARP and over IPv6 with Neighbor Discovery (neighbour caches emptied
# before each session, so each side must resolve the other).  Then raw
# frames injected through an AF_PACKET socket on the kernel side (wrong
# MAC, foreign EtherType, IPv4 fragment, bad IP header, bad UDP length,
# bad UDP checksum, wrong port, short, malformed ARP) must each be
# dropped and counted by cause while a session over the same port still
# completes.  The DPDK side sends IPv4 frames without a UDP checksum
# (WIRE-13), which the kernel accepts.  Over net_tap, which offers checksum offload, the link hands
# the IPv4 and UDP checksums to the port both ways.  Needs root
# (namespaces); SKIP (77) otherwise.
# Usage: test_dpdk_veth.sh MROCE_PERF
set -u
PERF=$1
[ "$(id -u)" -eq 0 ] || { echo "SKIP: needs root for network namespaces"; exit 77; }
command -v python3 >/dev/null || { echo "SKIP: needs python3"; exit 77; }
A=mrdpa$$
B=mrdpb$$
DIR=$(mktemp -d /tmp/mroce-dpdkveth.XXXXXX)
SRV=
cleanup() {
    [ -n "$SRV" ] && kill "$SRV" 2>/dev/null
    ip netns del $A 2>/dev/null
    ip netns del $B 2>/dev/null
    rm -rf "$DIR"
}
trap cleanup EXIT
trap "exit 1" HUP INT TERM PIPE
ip netns add $A && ip netns add $B || { echo "SKIP: cannot create namespaces"; exit 77; }
ip link add va$$ type veth peer name vb$$ || { echo "SKIP: no veth"; exit 77; }
ip link set va$$ netns $A
ip link set vb$$ netns $B
MAC_A=02:00:00:00:d0:01
# DPDK's end: up, no address; the kernel there must not answer for it.
ip netns exec $A sysctl -qw net.ipv6.conf.all.disable_ipv6=1
ip -n $A link set va$$ address $MAC_A mtu 8000 up
ip -n $B link set vb$$ address 02:00:00:00:d0:02 mtu 8000 up
ip -n $B addr add 10.77.0.2/24 dev vb$$
ip -n $B addr add fd77::2/64 dev vb$$ nodad
# veth leaves UDP checksums to the receiver's hardware; frames that reach
# an AF_PACKET socket must carry them.
ip netns exec $B ethtool -K vb$$ tx off >/dev/null 2>&1
VDEV="net_af_packet,iface=va$$"
fail=0
port=$((21000 + $$ % 1000 * 8))

dpdk() { # runs mroce-perf in A over DPDK
    MROCE_DUMP_COUNTERS=1 MROCE_DATAPATH=dpdk MROCE_DPDK_VDEV=$VDEV \
        ip netns exec $A timeout 30 "$PERF" "$@"
}
kern() { # runs mroce-perf in B over kernel sockets
    MROCE_DATAPATH=socket ip netns exec $B timeout 30 "$PERF" "$@"
}
ready() { # waits until the server in $DIR/srv.log listens (the caller
    # removed the last server's log before starting this one)
    i=0
    while ! grep -q 'Waiting for client' "$DIR/srv.log" 2>/dev/null &&
        [ $i -lt 400 ]; do
        sleep 0.05
        i=$((i + 1))
    done
}

# session NAME SERVER(dpdk|kern) IP_DPDK IP_KERN TEST ARGS...: the server
# on one side, the client on the other, data verified at the receiver.
session() {
    name=$1 side=$2 ipd=$3 ipk=$4
    shift 4
    ip -n $B neigh flush dev vb$$ 2>/dev/null
    ip -n $B -6 neigh flush dev vb$$ 2>/dev/null
    rm -f "$DIR/srv.log"
    if [ "$side" = dpdk ]; then
        dpdk "$1" -p $port -B "$ipd" >"$DIR/srv.log" 2>&1 &
        SRV=$!
        ready
        kern "$@" -p $port "$ipd" -B "$ipk" --verify >"$DIR/cli.log" 2>&1
    else
        kern "$1" -p $port -B "$ipk" >"$DIR/srv.log" 2>&1 &
        SRV=$!
        ready
        dpdk "$@" -p $port "$ipk" -B "$ipd" --verify >"$DIR/cli.log" 2>&1
    fi
    rc=$?
    wait $SRV
    src=$?
    SRV=
    checked=$(sed -n 's/.*verify *: \([0-9]*\) bytes checked here, 0 mismatches here, 0 at the peer.*/\1/p' \
        "$DIR/cli.log" "$DIR/srv.log" | sort -n | tail -1)
    # The DPDK side had to resolve the kernel side, or answer it.
    resolved=$(sed -n 's/.*resolve_req \([0-9]*\) resolve_reply \([0-9]*\).*/\1 \2/p' \
        "$DIR/cli.log" "$DIR/srv.log")
    # Zero-copy transmit (af_packet copies a chained frame into its
    # ring): payloads sent in place, none held after the link closed.
    zc=$(sed -n 's/.*zc [01] tx \([0-9]*\) copied [0-9]* waits [0-9]* held \([0-9]*\)$/\1 \2/p' \
        "$DIR/cli.log" "$DIR/srv.log")
    zc_tx=$((zc_tx + ${zc%% *}))
    # The DPDK side sends no UDP checksum over IPv4 (WIRE-13), which the
    # kernel must accept; over IPv6 it sums it.
    sent=none
    case $ipd in *:*) sent=software ;; esac
    if [ $rc -ne 0 ] || [ $src -ne 0 ] || [ -z "$checked" ] ||
        [ "$checked" -eq 0 ] || [ -z "$resolved" ] || [ "$resolved" = "0 0" ] ||
        [ -z "$zc" ] || [ "${zc#* }" != 0 ] ||
        ! grep -q "udp checksum sent: $sent" "$DIR/cli.log" "$DIR/srv.log"; then
        echo "FAIL $name: client rc $rc, server rc $src, checked '$checked', resolve '$resolved', zero-copy tx/held '$zc'"
        tail -n 4 "$DIR/cli.log" "$DIR/srv.log"
        fail=1
    else
        echo "ok   $name: $checked bytes verified (DPDK resolve req/reply $resolved, zero-copy ${zc% *})"
    fi
    port=$((port + 4))
}

LOSS="--fault tx:drop=0.01,reorder=0.01"
# loss at the receiving end: a sender's retransmissions leave by zero-copy
RXLOSS="--fault rx:drop=0.01,reorder=0.01"
zc_tx=0
for srv in ${SERVERS:-dpdk kern}; do
    for loss in "" "$LOSS"; do
        tag="server=$srv${loss:+ loss}"
        # shellcheck disable=SC2086
        session "v4 write_bw $tag" $srv 10.77.0.1 10.77.0.2 write_bw -n 60 -s 65536 $loss
        # shellcheck disable=SC2086
        session "v4 send_bw $tag" $srv 10.77.0.1 10.77.0.2 send_bw -n 60 -s 16384 $loss
        # shellcheck disable=SC2086
        session "v4 read_bw $tag" $srv 10.77.0.1 10.77.0.2 read_bw -n 40 -s 16384 $loss
    done
    session "v6 write_bw server=$srv rx loss" $srv fd77::1 fd77::2 write_bw -n 60 -s 65536 $RXLOSS
    session "v6 send_lat server=$srv" $srv fd77::1 fd77::2 send_lat -n 50 -s 64
done

# Checksum offload: net_tap offers IPv4 and UDP checksums both ways (it
# computes them in software itself), so the link hands them to the port;
# the kernel on the tap's other end must accept what the port sent.  The
# tap exists once the DPDK server is up: its kernel side gets an address
# then, and the socket client runs in the same namespace.  The tap PMD
# takes frames of at most 1522 bytes (max_rx_pktlen), hence -m 1024.
tapsession() {
    name=$1
    shift
    tap=mrtap$$
    rm -f "$DIR/srv.log"
    MROCE_DUMP_COUNTERS=1 MROCE_DATAPATH=dpdk MROCE_DPDK_VDEV="net_tap,iface=$tap" \
        ip netns exec $A timeout 30 "$PERF" "$1" -p $port -B 10.78.0.1 \
        >"$DIR/srv.log" 2>&1 &
    SRV=$!
    ready
    ip -n $A addr add 10.78.0.2/24 dev $tap &&
        ip -n $A link set $tap up
    MROCE_DATAPATH=socket ip netns exec $A timeout 30 "$PERF" "$@" -p $port \
        10.78.0.1 -B 10.78.0.2 --verify >"$DIR/cli.log" 2>&1
    rc=$?
    wait $SRV
    src=$?
    SRV=
    port=$((port + 4))
    checked=$(sed -n 's/.*verify *: \([0-9]*\) bytes checked here, 0 mismatches here, 0 at the peer.*/\1/p' \
        "$DIR/cli.log" "$DIR/srv.log" | sort -n | tail -1)
    good=$(sed -n 's/.*rx_csum_good \([0-9]*\).*/\1/p' "$DIR/srv.log")
    if [ $rc -ne 0 ] || [ $src -ne 0 ] || [ -z "$checked" ] ||
        [ "$checked" -eq 0 ] || ! grep -q 'used: tx 1 rx 1' "$DIR/srv.log" ||
        [ -z "$good" ] || [ "$good" -eq 0 ]; then
        echo "FAIL $name: client rc $rc, server rc $src, checked '$checked', rx_csum_good '$good'"
        grep 'checksum offload' "$DIR/srv.log"
        tail -n 4 "$DIR/cli.log" "$DIR/srv.log"
        fail=1
    else
        echo "ok   $name: $checked bytes verified, checksums offloaded both ways ($good vouched for by the port)"
    fi
}
tapsession "tap offload write_bw loss" write_bw -n 60 -s 65536 -m 1024 $LOSS
tapsession "tap offload read_bw loss" read_bw -n 40 -s 16384 -m 1024 $LOSS

# Bad frames into the DPDK port while its server waits, then a good
# session over the same port.  $1: 4 or 6; the rest: the causes whose
# counters must have counted every frame injected.  An IPv4 fragment never
# reaches the port over af_packet (its packet socket has the kernel
# reassemble them, PACKET_FANOUT_FLAG_DEFRAG), so fragments are judged
# over IPv6.
badframes() {
    fam=$1
    shift
    ipd=10.77.0.1 ipk=10.77.0.2
    [ "$fam" = 6 ] && ipd=fd77::1 ipk=fd77::2
    rm -f "$DIR/srv.log"
    dpdk write_bw -p $port -B $ipd >"$DIR/srv.log" 2>&1 &
    SRV=$!
    ready
    ip netns exec $B python3 "$INJECT" vb$$ $MAC_A $port $fam >"$DIR/inject.log" 2>&1
    inj=$?
    kern write_bw -p $port $ipd -B $ipk -n 60 -s 65536 --verify >"$DIR/cli.log" 2>&1
    rc=$?
    wait $SRV
    src=$?
    SRV=
    port=$((port + 4))
    line=$(grep 'libmroce dpdk:' "$DIR/srv.log")
    if [ $inj -ne 0 ] || [ $rc -ne 0 ] || [ $src -ne 0 ] || [ -z "$line" ]; then
        echo "FAIL bad frames IPv$fam: inject rc $inj, client rc $rc, server rc $src"
        cat "$DIR/inject.log"
        tail -n 4 "$DIR/cli.log" "$DIR/srv.log"
        fail=1
        return
    fi
    n=$(sed -n 's/^injected \([0-9]*\) of each.*/\1/p' "$DIR/inject.log")
    bad=0
    # Each cause counted at least the frames of it injected ("mac" may
    # count more: other traffic on the wire).
    for c in "$@"; do
        v=$(echo "$line" | sed -n "s/.* $c \([0-9]*\).*/\1/p")
        if [ -z "$v" ] || [ "$v" -lt "$n" ]; then
            echo "FAIL bad frames IPv$fam: drop counter '$c' is '$v', want >= $n"
            bad=1
        fi
    done
    if [ $bad -ne 0 ]; then
        echo "$line"
        fail=1
    else
        echo "ok   bad frames IPv$fam dropped by cause ($(cat "$DIR/inject.log")), then a verified session: $line"
    fi
}
INJECT=$DIR/inject.py
cat >"$INJECT" <<'PYEOF'
# Writes malformed frames for the DPDK port at MAC on interface IFC.
import socket, struct, sys
ifc, mac, port, fam = sys.argv[1], bytes.fromhex(sys.argv[2].replace(':', '')), int(sys.argv[3]), sys.argv[4]
s = socket.socket(socket.AF_PACKET, socket.SOCK_RAW)
s.bind((ifc, 0))
src = bytes.fromhex('020000000d02')
S4, D4 = bytes([10, 77, 0, 2]), bytes([10, 77, 0, 1])
S6, D6 = bytes.fromhex('fd77' + '00' * 13 + '02'), bytes.fromhex('fd77' + '00' * 13 + '01')
def csum(b):
    if len(b) % 2: b += b'\0'
    t = sum(struct.unpack('!%dH' % (len(b) // 2), b))
    while t >> 16: t = (t & 0xffff) + (t >> 16)
    return (~t) & 0xffff
def ip4(payload, frag=0x4000, proto=17, dst=D4, bad_sum=False):
    h = struct.pack('!BBHHHBBH4s4s', 0x45, 0, 20 + len(payload), 0, frag, 64, proto, 0, S4, dst)
    c = csum(h) ^ (1 if bad_sum else 0)
    return h[:10] + struct.pack('!H', c) + h[12:] + payload
def ip6(payload, nh=17, hop=64, dst=D6):
    return struct.pack('!IHBB', 0x60000000, len(payload), nh, hop) + S6 + dst + payload
def udp(data, dport=port, ulen=None, bad=False, zero=False):
    ulen = 8 + len(data) if ulen is None else ulen
    if fam == '6':
        ph = S6 + D6 + struct.pack('!IxxxB', 8 + len(data), 17)
    else:
        ph = S4 + D4 + struct.pack('!BBH', 0, 17, 8 + len(data))
    u = struct.pack('!HHHH', 49999, dport, ulen, 0) + data
    c = csum(ph + u) or 0xffff
    if bad: c ^= 0x5a5a
    if zero: c = 0
    return u[:6] + struct.pack('!H', c) + u[8:]
def icmp6(m):
    ph = S6 + D6 + struct.pack('!IxxxB', len(m), 58)
    return m[:2] + struct.pack('!H', csum(ph + m)) + m[4:]
eth = lambda dst, et: dst + src + struct.pack('!H', et)
data = b'\0' * 64
n = 25
if fam == '4':
    E = eth(mac, 0x0800)
    frames = {
        'mac':       eth(bytes.fromhex('021122334455'), 0x0800) + ip4(udp(data)),
        'ethertype': eth(mac, 0x88b5) + b'\0' * 46,
        'fragment':  E + ip4(udp(data), frag=0x2000),
        'ip_hdr':    E + ip4(udp(data), bad_sum=True),
        'proto':     E + ip4(udp(data), proto=6),
        'ip_dst':    E + ip4(udp(data), dst=bytes([10, 77, 0, 9])),
        'port':      E + ip4(udp(data, dport=port + 7)),
        'udp_len':   E + ip4(udp(data, ulen=200)),
        'udp_csum':  E + ip4(udp(data, bad=True)),
        'arp':       eth(mac, 0x0806) + struct.pack('!HHBBH', 1, 0x0800, 6, 4, 9) + b'\0' * 20,
        'short':     E + b'\x45\x00',
    }
else:
    E = eth(mac, 0x86dd)
    ns = struct.pack('!BBHI', 135, 0, 0, 0) + D6 + bytes([1, 1]) + src
    frames = {
        'ethertype': eth(mac, 0x0800) + ip4(b'\0' * 28),
        'fragment':  E + ip6(struct.pack('!BBHI', 17, 0, 1, 7) + udp(data), nh=44),
        'ip_dst':    E + ip6(udp(data), dst=bytes.fromhex('fd77' + '00' * 13 + '09')),
        'udp_len':   E + ip6(udp(data, ulen=300)),
        'udp_csum':  E + ip6(udp(data, zero=True)),
        'proto':     E + ip6(udp(data), nh=6),
        'nd':        E + ip6(icmp6(ns), nh=58, hop=64),
        'icmpv6':    E + ip6(icmp6(struct.pack('!BBHHH', 128, 0, 0, 1, 1) + data), nh=58),
        'short':     E + b'\x60\x00',
    }
for f in frames.values():
    for _ in range(n):
        s.send(f)
print('injected', n, 'of each of', ' '.join(frames))
PYEOF
badframes 4 mac ethertype ip_hdr proto ip_dst port udp_len udp_csum arp short
badframes 6 ethertype fragment ip_dst udp_len udp_csum proto nd short
if [ "$zc_tx" -eq 0 ]; then
    echo "FAIL zero-copy: no payload sent in place over af_packet"
    fail=1
fi
[ $fail -eq 0 ] && echo "test_dpdk_veth: all passed"
exit $fail
