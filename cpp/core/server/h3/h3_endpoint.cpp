#include "core/server/h3/h3_endpoint.hpp"

#include <algorithm>
#include <chrono>
#include <cstring>

namespace loadbench::server {

namespace asio = boost::asio;
using udp = asio::ip::udp;

namespace {
// Datagrams read in one go before the connections answer (the rest wait for the next wake-up).
constexpr int datagrams_per_wakeup = 64;
}  // namespace

Http3Endpoint::Http3Endpoint(asio::io_context& io, udp::socket socket, HandlerContext& context,
                             Http3Credentials& credentials)
    : io_(io), socket_(std::move(socket)), timer_(io), ctx_(context), credentials_(credentials) {
    boost::system::error_code ec;
    socket_.non_blocking(true, ec);
    local_ = socket_.local_endpoint(ec);
}

Http3Endpoint::~Http3Endpoint() {
    // Sessions unregister their ids as they go: clear the routes first.
    by_id_.clear();
    for (auto& [raw, c] : sessions_) c.session.reset();
}

void Http3Endpoint::start() { receive_next(); }

void Http3Endpoint::add_id(std::string_view id, Http3Session* session) { by_id_[std::string(id)] = session; }

void Http3Endpoint::remove_id(std::string_view id) { by_id_.erase(std::string(id)); }

bool Http3Endpoint::send(const sockaddr* to, socklen_t to_len, const std::uint8_t* data, std::size_t size) {
    udp::endpoint destination;
    std::memcpy(destination.data(), to, std::min<std::size_t>(to_len, sizeof(sockaddr_storage)));
    destination.resize(to_len);
    boost::system::error_code ec;
    socket_.send_to(asio::buffer(data, size), destination, 0, ec);
    if (ec == asio::error::would_block || ec == asio::error::try_again) {
        if (!awaiting_writable_) {
            awaiting_writable_ = true;
            socket_.async_wait(udp::socket::wait_write, [this](boost::system::error_code wait_ec) {
                awaiting_writable_ = false;
                if (wait_ec || closed_) return;
                settle_all_ = true;  // whichever sessions kept a datagram back
                settle();
            });
        }
        return false;
    }
    return true;  // sent, or an error a retransmission may outlive (e.g. ICMP unreachable)
}

void Http3Endpoint::receive_next() {
    if (closed_) return;
    socket_.async_receive_from(asio::buffer(buffer_), sender_, [this](boost::system::error_code ec, std::size_t n) {
        if (ec == asio::error::operation_aborted || closed_) return;
        if (!ec) on_datagram(n);
        // Whatever else is queued now, without another wait (non-blocking reads).
        for (int i = 1; i < datagrams_per_wakeup && !closed_; ++i) {
            boost::system::error_code rec;
            const std::size_t more = socket_.receive_from(asio::buffer(buffer_), sender_, 0, rec);
            if (rec) break;
            on_datagram(more);
        }
        settle();
        receive_next();
    });
}

void Http3Endpoint::on_datagram(std::size_t size) {
    DatagramHeader header;
    if (!read_datagram_header(buffer_.data(), size, header)) return;
    const std::uint64_t now = quic_now();
    const auto found = by_id_.find(std::string(header.destination_id));
    if (found != by_id_.end()) {
        Http3Session* raw = found->second;
        raw->receive(buffer_.data(), size, local_.data(), local_.size(), sender_.data(), sender_.size(), now);
        touch(sessions_.at(raw));
        return;
    }
    if (!header.initial || stopping_) return;  // unknown connection, or no new ones while stopping
    auto session =
        std::make_unique<Http3Session>(ctx_, credentials_, static_cast<ConnectionIdRouter&>(*this), buffer_.data(),
                                       size, local_.data(), local_.size(), sender_.data(), sender_.size(), now);
    if (!session->ok()) return;
    Http3Session* raw = session.get();
    Connection& c = sessions_[raw];
    c.session = std::move(session);
    c.serial = ++next_serial_;
    touch(c);
    ctx_.counters.connection_opened();
    ctx_.counters.h3_connection();  // after opened: a snapshot never sees more h3 than accepted
}

void Http3Endpoint::touch(Connection& c) {
    if (c.touched) return;
    c.touched = true;
    touched_.push_back(c.session.get());
}

void Http3Endpoint::settle() {
    const std::uint64_t now = quic_now();
    if (settle_all_) {
        settle_all_ = false;
        for (auto it = sessions_.begin(); it != sessions_.end();) settle_one(it++, now);
    } else {
        for (Http3Session* raw : touched_) {
            const auto it = sessions_.find(raw);
            if (it != sessions_.end()) settle_one(it, now);
        }
    }
    touched_.clear();
    if (stopping_ && sessions_.empty()) {
        closed_ = true;
        boost::system::error_code ec;
        socket_.close(ec);
        timer_.cancel();
        return;
    }
    arm_timer();
}

void Http3Endpoint::settle_one(std::unordered_map<Http3Session*, Connection>::iterator it, std::uint64_t now) {
    Connection& c = it->second;
    c.touched = false;
    c.session->flush(*this, now);
    if (c.session->finished()) {
        sessions_.erase(it);  // its heap entries are skipped when they surface
        ctx_.counters.connection_closed();
        return;
    }
    const std::uint64_t at = c.session->next_wakeup();
    // Only an earlier wake-up goes on the heap; a later one is found when the earlier entry fires.
    if (at >= c.wakeup) return;
    c.wakeup = at;
    wakeups_.push_back(Wakeup{at, c.serial, it->first});
    std::push_heap(wakeups_.begin(), wakeups_.end(), std::greater<>());
}

void Http3Endpoint::arm_timer() {
    // Drop entries of sessions that are gone, or superseded by an earlier one of theirs.
    while (!wakeups_.empty()) {
        const Wakeup& top = wakeups_.front();
        const auto it = sessions_.find(top.session);
        if (it != sessions_.end() && it->second.serial == top.serial && it->second.wakeup == top.at) break;
        std::pop_heap(wakeups_.begin(), wakeups_.end(), std::greater<>());
        wakeups_.pop_back();
    }
    const std::uint64_t at = wakeups_.empty() ? Http3Session::never : wakeups_.front().at;
    if (at >= timer_at_) return;  // the armed timer fires first (early is fine: on_timer checks)
    timer_at_ = at;
    timer_.expires_at(asio::steady_timer::time_point(std::chrono::nanoseconds(at)));
    timer_.async_wait([this, at](boost::system::error_code ec) {
        if (ec || closed_ || at != timer_at_) return;
        timer_at_ = Http3Session::never;
        on_timer();
    });
}

void Http3Endpoint::on_timer() {
    const std::uint64_t now = quic_now();
    while (!wakeups_.empty() && wakeups_.front().at <= now) {
        const Wakeup due = wakeups_.front();
        std::pop_heap(wakeups_.begin(), wakeups_.end(), std::greater<>());
        wakeups_.pop_back();
        const auto it = sessions_.find(due.session);
        if (it == sessions_.end() || it->second.serial != due.serial || it->second.wakeup != due.at) continue;
        Connection& c = it->second;
        c.wakeup = Http3Session::never;  // settle puts its next wake-up back on the heap
        if (c.session->next_wakeup() <= now) c.session->on_timer(now);
        touch(c);
    }
    settle();
}

void Http3Endpoint::begin_shutdown() {
    if (stopping_) return;
    stopping_ = true;
    const std::uint64_t now = quic_now();
    for (auto& [raw, c] : sessions_) c.session->begin_shutdown(now);
    settle_all_ = true;
    settle();
}

}  // namespace loadbench::server
