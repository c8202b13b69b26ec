#include "core/generator/loop/connection_holder.hpp"

#include <arpa/inet.h>
#include <fcntl.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <sys/epoll.h>
#include <sys/socket.h>
#include <time.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <memory>
#include <stdexcept>

#include "core/http/response_parser.hpp"

namespace loadbench::generator {
namespace {

enum : std::uint8_t { kIdle = 0, kConnecting = 1, kOpen = 2, kSent = 3, kAnswered = 4, kClosed = 5 };

double now_s() {
    timespec t{};
    ::clock_gettime(CLOCK_MONOTONIC, &t);
    return static_cast<double>(t.tv_sec) + static_cast<double>(t.tv_nsec) * 1e-9;
}

int wait_ms(double deadline) {
    const double left = deadline - now_s();
    if (left <= 0) return 0;
    return static_cast<int>(left * 1000.0) + 1;
}

}  // namespace

ConnectionHolder::ConnectionHolder(HoldConfig config) : config_(std::move(config)) {
    if (config_.connections < 0) throw std::invalid_argument("connections must be >= 0");
    sockaddr_in v4{};
    sockaddr_in6 v6{};
    if (::inet_pton(AF_INET, config_.address.c_str(), &v4.sin_addr) == 1) {
        v4.sin_family = AF_INET;
        v4.sin_port = htons(config_.port);
        address_.assign(reinterpret_cast<unsigned char*>(&v4), reinterpret_cast<unsigned char*>(&v4) + sizeof v4);
    } else if (::inet_pton(AF_INET6, config_.address.c_str(), &v6.sin6_addr) == 1) {
        v6.sin6_family = AF_INET6;
        v6.sin6_port = htons(config_.port);
        address_.assign(reinterpret_cast<unsigned char*>(&v6), reinterpret_cast<unsigned char*>(&v6) + sizeof v6);
    } else {
        throw std::invalid_argument("not a numeric IP address: " + config_.address);
    }
    if (config_.connects_in_flight < 1) config_.connects_in_flight = 1;
    epoll_fd_ = ::epoll_create1(EPOLL_CLOEXEC);
    if (epoll_fd_ < 0) throw std::runtime_error(std::string("epoll_create1: ") + std::strerror(errno));
    slots_.resize(static_cast<std::size_t>(config_.connections));
}

ConnectionHolder::~ConnectionHolder() {
    close_all();
    if (epoll_fd_ >= 0) ::close(epoll_fd_);
}

void ConnectionHolder::drop(Slot& slot) {
    if (slot.fd >= 0) ::close(slot.fd);  // closing removes it from the epoll set
    slot.fd = -1;
    slot.state = kClosed;
}

void ConnectionHolder::close_all() {
    for (Slot& slot : slots_)
        if (slot.fd >= 0) drop(slot);
}

bool ConnectionHolder::start_connect(Slot& slot, std::string& error) {
    const auto* address = reinterpret_cast<const sockaddr*>(address_.data());
    const int fd = ::socket(address->sa_family, SOCK_STREAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0);
    if (fd < 0) {
        error = std::string("socket: ") + std::strerror(errno);
        return false;
    }
    const int one = 1;
    ::setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof one);
    if (::connect(fd, address, static_cast<socklen_t>(address_.size())) != 0 && errno != EINPROGRESS) {
        error = std::string("connect: ") + std::strerror(errno);
        ::close(fd);
        return false;
    }
    epoll_event event{};
    event.events = EPOLLOUT;
    event.data.u64 = static_cast<std::uint64_t>(&slot - slots_.data());
    if (::epoll_ctl(epoll_fd_, EPOLL_CTL_ADD, fd, &event) != 0) {
        error = std::string("epoll_ctl: ") + std::strerror(errno);
        ::close(fd);
        return false;
    }
    slot.fd = fd;
    slot.state = kConnecting;
    return true;
}

OpenResult ConnectionHolder::open(double timeout_s) {
    OpenResult result;
    const double deadline = now_s() + timeout_s;
    std::size_t next = 0;
    int in_flight = 0;
    std::vector<epoll_event> events(512);
    const auto note = [&result](const std::string& error) {
        if (result.first_error.empty()) result.first_error = error;
    };
    while (next < slots_.size() || in_flight > 0) {
        while (next < slots_.size() && in_flight < config_.connects_in_flight) {
            std::string error;
            if (start_connect(slots_[next], error)) {
                ++in_flight;
            } else {
                slots_[next].state = kClosed;
                ++result.failed;
                note(error);
                if (errno == EMFILE || errno == ENFILE) {  // no fd left: the rest fail the same way
                    for (std::size_t i = next + 1; i < slots_.size(); ++i) slots_[i].state = kClosed;
                    result.failed += static_cast<int>(slots_.size() - next - 1);
                    next = slots_.size();
                    break;
                }
            }
            ++next;
        }
        if (in_flight == 0) break;
        const int n = ::epoll_wait(epoll_fd_, events.data(), static_cast<int>(events.size()), wait_ms(deadline));
        if (n < 0 && errno == EINTR) continue;
        if (n <= 0) {
            result.timed_out = true;
            break;
        }
        for (int i = 0; i < n; ++i) {
            Slot& slot = slots_[events[static_cast<std::size_t>(i)].data.u64];
            if (slot.state != kConnecting) continue;
            --in_flight;
            int error = 0;
            socklen_t length = sizeof error;
            ::getsockopt(slot.fd, SOL_SOCKET, SO_ERROR, &error, &length);
            if (error != 0) {
                note(std::string("connect: ") + std::strerror(error));
                ++result.failed;
                drop(slot);
                continue;
            }
            // Held: watched only for the peer hanging up (no buffer, nothing to read).
            epoll_event event{};
            event.events = EPOLLRDHUP;
            event.data.u64 = events[static_cast<std::size_t>(i)].data.u64;
            ::epoll_ctl(epoll_fd_, EPOLL_CTL_MOD, slot.fd, &event);
            slot.state = kOpen;
            ++result.connected;
        }
    }
    for (Slot& slot : slots_) {
        if (slot.state == kConnecting) {
            ++result.failed;
            drop(slot);
        }
    }
    if (result.timed_out) note("not all connections were established in time");
    return result;
}

int ConnectionHolder::held() {
    std::vector<epoll_event> events(512);
    for (;;) {
        const int n = ::epoll_wait(epoll_fd_, events.data(), static_cast<int>(events.size()), 0);
        if (n < 0 && errno == EINTR) continue;
        if (n <= 0) break;
        for (int i = 0; i < n; ++i) {
            Slot& slot = slots_[events[static_cast<std::size_t>(i)].data.u64];
            if (slot.state == kOpen &&
                (events[static_cast<std::size_t>(i)].events & (EPOLLRDHUP | EPOLLHUP | EPOLLERR)))
                drop(slot);
        }
        if (n < static_cast<int>(events.size())) break;
    }
    int open = 0;
    for (const Slot& slot : slots_) open += slot.state == kOpen;
    return open;
}

RequestResult ConnectionHolder::request_all(double timeout_s) {
    RequestResult result;
    const auto note = [&result](const std::string& error) {
        if (result.first_error.empty()) result.first_error = error;
    };
    // Parsing state exists only for this phase; holding needs none.
    std::vector<std::unique_ptr<http::ResponseParser>> parsers(slots_.size());
    std::vector<std::string> pending(slots_.size());
    int waiting = 0;
    for (std::size_t i = 0; i < slots_.size(); ++i) {
        Slot& slot = slots_[i];
        if (slot.state != kOpen) continue;
        const ssize_t sent = ::send(slot.fd, config_.request.data(), config_.request.size(), MSG_NOSIGNAL);
        if (sent != static_cast<ssize_t>(config_.request.size())) {
            note(sent < 0 ? std::string("send: ") + std::strerror(errno) : "send: partial write of a small request");
            ++result.failed;
            drop(slot);
            continue;
        }
        epoll_event event{};
        event.events = EPOLLIN | EPOLLRDHUP;
        event.data.u64 = i;
        ::epoll_ctl(epoll_fd_, EPOLL_CTL_MOD, slot.fd, &event);
        parsers[i] = std::make_unique<http::ResponseParser>();
        parsers[i]->start(config_.head_request);
        slot.state = kSent;
        ++waiting;
    }
    const double deadline = now_s() + timeout_s;
    std::vector<epoll_event> events(512);
    std::vector<char> buffer(16384);
    while (waiting > 0) {
        const int n = ::epoll_wait(epoll_fd_, events.data(), static_cast<int>(events.size()), wait_ms(deadline));
        if (n < 0 && errno == EINTR) continue;
        if (n <= 0) break;
        for (int e = 0; e < n; ++e) {
            const std::size_t i = events[static_cast<std::size_t>(e)].data.u64;
            Slot& slot = slots_[i];
            if (slot.state != kSent) continue;
            bool finished = false, ok = false;
            for (;;) {
                const ssize_t got = ::recv(slot.fd, buffer.data(), buffer.size(), 0);
                if (got < 0 && errno == EINTR) continue;
                if (got < 0 && (errno == EAGAIN || errno == EWOULDBLOCK)) break;
                if (got <= 0) {
                    const bool complete =
                        got == 0 && parsers[i]->finish_at_eof() == http::ResponseParser::Status::Complete;
                    if (!complete)
                        note(got == 0 ? "the server closed a held connection"
                                      : std::string("recv: ") + std::strerror(errno));
                    finished = true;
                    ok = complete;
                    break;
                }
                pending[i].append(buffer.data(), static_cast<std::size_t>(got));
                std::size_t consumed = 0;
                const auto status = parsers[i]->parse(pending[i].data(), pending[i].size(), consumed);
                pending[i].erase(0, consumed);
                if (status == http::ResponseParser::Status::Complete) {
                    finished = ok = true;
                    break;
                }
                if (status == http::ResponseParser::Status::Error) {
                    note(std::string("malformed response: ") + (parsers[i]->error() ? parsers[i]->error() : "?"));
                    finished = true;
                    break;
                }
            }
            if (!finished) continue;
            --waiting;
            const int code = parsers[i]->status_code();
            if (ok && code >= 200 && code < 300) {
                ++result.ok;
                slot.state = kAnswered;
            } else if (ok) {
                ++result.non_2xx;
                slot.state = kAnswered;
            } else {
                ++result.failed;
                drop(slot);
            }
        }
    }
    for (Slot& slot : slots_) {
        if (slot.state == kSent) {
            ++result.failed;
            note("no response in time");
            drop(slot);
        }
    }
    return result;
}

}  // namespace loadbench::generator
