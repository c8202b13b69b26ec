#pragma once
// Holds many idle keep-alive connections at the smallest cost per connection (C10k): an fd
// and a state byte each, one epoll set, no buffers while idle. It answers "how much memory
// does an idle connection cost" for the server (measured outside) and for the generator
// itself (this process's own growth).
//
//   ConnectionHolder holder(config);
//   holder.open(timeout_s);      // N non-blocking connects, a bounded number in flight
//   holder.held();               // still open (a peer that closed one is noticed here)
//   holder.request_all(timeout); // one request on each: proof that all are live
#include <cstdint>
#include <string>
#include <vector>

namespace loadbench::generator {

struct HoldConfig {
    std::string address;  // numeric IPv4 or IPv6 address
    std::uint16_t port = 0;
    int connections = 0;
    std::string request;  // the bytes sent by request_all() (a keep-alive GET)
    bool head_request = false;
    int connects_in_flight = 256;  // more would overflow the server's accept backlog (SYN drops)
};

struct OpenResult {
    int connected = 0;
    int failed = 0;
    bool timed_out = false;
    std::string first_error;
};

struct RequestResult {
    int ok = 0;  // a 2xx response, connection still usable
    int non_2xx = 0;
    int failed = 0;  // closed, reset, malformed or no answer in time
    std::string first_error;
};

class ConnectionHolder {
public:
    explicit ConnectionHolder(HoldConfig config);  // throws std::invalid_argument on a bad address
    ~ConnectionHolder();
    ConnectionHolder(const ConnectionHolder&) = delete;
    ConnectionHolder& operator=(const ConnectionHolder&) = delete;

    OpenResult open(double timeout_s);
    // Connections open now (checked without reading: a hang-up or error drops one).
    int held();
    RequestResult request_all(double timeout_s);
    void close_all();

    // Bytes this object keeps per connection while holding (the vector's slots).
    static constexpr std::size_t bytes_per_slot() { return sizeof(Slot); }

private:
    struct Slot {
        int fd = -1;
        std::uint8_t state = 0;  // see connection_holder.cpp
    };

    bool start_connect(Slot& slot, std::string& error);
    void drop(Slot& slot);

    HoldConfig config_;
    int epoll_fd_ = -1;
    std::vector<Slot> slots_;
    std::vector<unsigned char> address_;  // sockaddr_in or sockaddr_in6
};

}  // namespace loadbench::generator
