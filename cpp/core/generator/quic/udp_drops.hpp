#pragma once
// The kernel's UDP receive drops, machine-wide: /proc/net/snmp (Udp:) and /proc/net/snmp6
// (Udp6*) summed over both families. An HTTP/3 run reads them at the window's start and after
// the drain; the difference is the datagrams the kernel dropped meanwhile - the run's when
// nothing else on the machine receives UDP, which the counters cannot tell apart.
#include <cstdint>

namespace loadbench::generator {

struct UdpDrops {
    bool read = false;           // /proc/net/snmp was readable
    uint64_t in_errors = 0;      // InErrors: every datagram dropped on receive (the next one included)
    uint64_t rcvbuf_errors = 0;  // RcvbufErrors: of those, because the socket's receive buffer was full
};

UdpDrops read_udp_drops() noexcept;

}  // namespace loadbench::generator
