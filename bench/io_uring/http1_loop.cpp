// A keep-alive HTTP/1.1 loop in one thread, on epoll with read()/write() and on io_uring with
// what issue 45 asks to try - a multishot receive per connection into a ring of provided
// buffers, the sends of a whole batch of completions submitted in one call, registered files,
// and sends that post no completion unless they fail. Nothing else differs: the same request,
// the same response parser, the same counting, the same schedule. So the difference between
// the modes' CPU per response is what io_uring would save the generator's I/O on this kernel,
// before any engine work (histograms, phases, sessions) is added on top - the measurement that
// decides whether the engine's loop should move to io_uring (bench/io_uring_closed_loop.py,
// bench/io_uring_open_loop.py).
//
//   http1_loop MODE HOST PORT PATH CONNECTIONS WARMUP_S SECONDS [RATE [BATCH_US]]
//
// Without RATE a closed loop: each response's connection sends the next request at once.
// MODE: epoll, uring or uring-waitN (a wait returns at N completions or after 100 us).
// With RATE an open loop: requests are due every 1/RATE s from the start and go out on a
// connection without a request in flight (queued while there is none); when requests are due
// closer together than BATCH_US (default 40, the engine's send batch) a wake-up sends every
// one due up to BATCH_US after the first. MODE: epoll (wakes for the next due time or any
// response), epoll-tick (sleeps to the next due time in clock_nanosleep, then takes every ready
// response in one epoll_wait(0): the engine's reads at the send wake-ups), uring (wakes for the
// next due time or any completion) or uring-tick (one io_uring wait that ends only at the due
// time, harvesting every completion then - the tick-driven loop io_uring makes one syscall).
// A request queued for a connection wakes every mode at the next response instead.
//
// Prints one JSON line: the window's responses and CPU seconds (and, open, its sends' lateness).
#include <arpa/inet.h>
#include <errno.h>
#include <fcntl.h>
#include <liburing.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <sys/epoll.h>
#include <sys/mman.h>
#include <sys/prctl.h>
#include <sys/resource.h>
#include <sys/socket.h>
#include <time.h>
#include <unistd.h>

#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <deque>
#include <string>
#include <vector>

namespace {

double now_s() {
    timespec ts{};
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return static_cast<double>(ts.tv_sec) + static_cast<double>(ts.tv_nsec) * 1e-9;
}

double cpu_s() {  // the whole process: io_uring's own workers are threads of it
    rusage ru{};
    getrusage(RUSAGE_SELF, &ru);
    return static_cast<double>(ru.ru_utime.tv_sec + ru.ru_stime.tv_sec) +
           static_cast<double>(ru.ru_utime.tv_usec + ru.ru_stime.tv_usec) * 1e-6;
}

[[noreturn]] void die(const char* what, int err) {
    std::fprintf(stderr, "http1_loop: %s: %s\n", what, std::strerror(err));
    std::exit(2);
}

// Counts complete responses in a byte stream: a head ending in CRLFCRLF, then Content-Length
// bytes of body. Enough for the servers measured here (fixed-length bodies, no chunking).
struct ResponseCounter {
    std::string pending;
    std::size_t body_left = 0;
    bool in_body = false;

    int feed(const char* data, std::size_t size) {
        int done = 0;
        while (size > 0) {
            if (in_body) {
                const std::size_t take = size < body_left ? size : body_left;
                body_left -= take;
                data += take;
                size -= take;
                if (body_left == 0) {
                    in_body = false;
                    done += 1;
                }
                continue;
            }
            const std::size_t old = pending.size();
            pending.append(data, size);
            const std::size_t end = pending.find("\r\n\r\n", old >= 3 ? old - 3 : 0);
            if (end == std::string::npos) return done;  // the head goes on in the next bytes
            std::size_t length = 0;
            const std::size_t at = pending.find("ontent-Length:");
            if (at != std::string::npos && at < end) length = std::strtoul(pending.c_str() + at + 14, nullptr, 10);
            const std::size_t consumed = end + 4 - old;  // of these bytes, the head's
            data += consumed;
            size -= consumed;
            pending.clear();
            body_left = length;
            in_body = length > 0;
            if (!in_body) done += 1;
        }
        return done;
    }
};

int connect_to(const char* host, int port) {
    const int fd = socket(AF_INET, SOCK_STREAM, 0);
    if (fd < 0) die("socket", errno);
    sockaddr_in addr{};
    addr.sin_family = AF_INET;
    addr.sin_port = htons(static_cast<std::uint16_t>(port));
    inet_pton(AF_INET, host, &addr.sin_addr);
    if (connect(fd, reinterpret_cast<sockaddr*>(&addr), sizeof addr) != 0) die("connect", errno);
    int one = 1;
    setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof one);
    return fd;
}

struct Window {
    double warmup_end, end;
    long responses = 0;
    long batches = 0;         // epoll_wait or io_uring_submit_and_wait calls in the window
    long answered_total = 0;  // warm-up included: each connection's requests, but the last
    double cpu_start = -1, cpu_end = -1, wall_start = 0, wall_end = 0;
    // Called after each batch: opens and closes the window at the first batch past its edges.
    bool tick(int answered) {
        const double t = now_s();
        answered_total += answered;
        if (cpu_start < 0 && t >= warmup_end) {
            cpu_start = cpu_s();
            wall_start = t;
            return true;
        }
        if (cpu_start >= 0) {
            responses += answered;
            batches += 1;
        }
        if (t >= end) {
            cpu_end = cpu_s();
            wall_end = t;
            return false;
        }
        return true;
    }
};

// The open loop's schedule, the same for every mode: request k is due at start + k / rate and
// goes out on a connection without a request in flight, or waits, in order, for one to free.
struct Schedule {
    double start, gap, batch, window_start;  // seconds
    long next = 0;                           // the first request not yet due
    std::deque<double> queued;               // due times of requests waiting for a connection
    std::vector<std::size_t> idle;           // connections without a request in flight
    std::vector<double> lateness;            // each window send's pass time minus its due time

    double due(long k) const { return start + gap * static_cast<double>(k); }
    // When the loop wakes for its next send: at the next due time, or a batch span after it
    // when requests come closer together than the span (then one wake-up sends them all).
    double wake_at() const { return due(next) + (gap < batch ? batch : 0.0); }
    bool waiting() const { return !queued.empty(); }

    // Hands every request due by `now` to a free connection; send(i) writes one on connection i.
    template <class Send>
    void release(double now, Send&& send) {
        while (due(next) <= now) queued.push_back(due(next++));
        while (!queued.empty() && !idle.empty()) {
            const std::size_t i = idle.back();
            idle.pop_back();
            if (now >= window_start) lateness.push_back(now - queued.front());
            queued.pop_front();
            send(i);
        }
    }
};

void sleep_until(double at) {
    timespec ts{static_cast<time_t>(at), static_cast<long>((at - static_cast<double>(static_cast<time_t>(at))) * 1e9)};
    while (clock_nanosleep(CLOCK_MONOTONIC, TIMER_ABSTIME, &ts, nullptr) == EINTR) {
    }
}

timespec span_of(double seconds) {
    if (seconds < 0) seconds = 0;
    return timespec{static_cast<time_t>(seconds),
                    static_cast<long>((seconds - static_cast<double>(static_cast<time_t>(seconds))) * 1e9)};
}

// Closed (open == nullptr): each response's connection sends the next request. Open: the
// schedule's; tick: sleep to the send's time and take the ready responses then, unless a request
// waits for a connection (then a response must wake the loop at once).
void run_epoll(const std::vector<int>& fds, const std::string& request, Window& w, Schedule* open, bool tick) {
    const int ep = epoll_create1(0);
    std::vector<ResponseCounter> counters(fds.size());
    auto write_on = [&](std::size_t i) {
        if (write(fds[i], request.data(), request.size()) < 0) die("write", errno);
    };
    // a connection free for the next request: closed, it sends at once; open, it waits for one due
    auto ready = [&](std::size_t i) {
        if (open) {
            open->idle.push_back(i);
        } else {
            write_on(i);
        }
    };
    for (std::size_t i = 0; i < fds.size(); ++i) {
        fcntl(fds[i], F_SETFL, fcntl(fds[i], F_GETFL) | O_NONBLOCK);
        epoll_event ev{};
        ev.events = EPOLLIN | EPOLLET;
        ev.data.u64 = i;
        epoll_ctl(ep, EPOLL_CTL_ADD, fds[i], &ev);
        ready(i);
    }
    std::vector<epoll_event> events(256);
    char buf[16384];
    for (;;) {
        int n;
        if (open == nullptr) {
            n = epoll_wait(ep, events.data(), static_cast<int>(events.size()), -1);
        } else {
            const double now = now_s();
            open->release(now, write_on);
            const double wake = open->wake_at();
            if (tick && !open->waiting()) {
                sleep_until(wake);
                n = epoll_wait(ep, events.data(), static_cast<int>(events.size()), 0);
            } else {
                const timespec timeout = span_of(wake - now);
                n = epoll_pwait2(ep, events.data(), static_cast<int>(events.size()), &timeout, nullptr);
            }
        }
        if (n < 0 && errno != EINTR) die("epoll_wait", errno);
        int answered = 0;
        for (int e = 0; e < n; ++e) {
            const std::size_t i = events[e].data.u64;
            for (;;) {
                const ssize_t got = read(fds[i], buf, sizeof buf);
                if (got > 0) {
                    const int done = counters[i].feed(buf, static_cast<std::size_t>(got));
                    for (int k = 0; k < done; ++k) ready(i);
                    answered += done;
                    if (static_cast<std::size_t>(got) < sizeof buf) break;  // drained
                } else if (got == 0) {
                    die("read", ECONNRESET);
                } else {
                    if (errno != EAGAIN) die("read", errno);
                    break;
                }
            }
        }
        if (!w.tick(answered)) break;
    }
    close(ep);
}

// Closed: wait_nr > 1 makes each wait return once that many completions are ready or 100 us
// have passed (fewer, larger batches for some latency), the wake-up trade an engine would tune.
// Open: the schedule's; tick: one wait that ends only at the send's time (a wait for more
// completions than can come), unless a request waits for a connection.
void run_uring(const std::vector<int>& fds, const std::string& request, Window& w, unsigned wait_nr, Schedule* open,
               bool tick) {
    constexpr unsigned kBuffers = 1024;  // a power of two: the provided-buffer ring's size
    constexpr unsigned kBufferSize = 4096;
    constexpr int kGroup = 1;
    constexpr unsigned kUntilTimeout = 1U << 30;  // more completions than a wait can see
    io_uring ring{};
    io_uring_params params{};
    params.flags = IORING_SETUP_SINGLE_ISSUER | IORING_SETUP_DEFER_TASKRUN;
    params.cq_entries = 8192;
    params.flags |= IORING_SETUP_CQSIZE;
    if (int rc = io_uring_queue_init_params(2048, &ring, &params); rc < 0) die("io_uring_queue_init", -rc);
    io_uring_register_ring_fd(&ring);  // each enter skips the ring's file lookup (5.18+)
    if (int rc = io_uring_register_files(&ring, fds.data(), static_cast<unsigned>(fds.size())); rc < 0)
        die("io_uring_register_files", -rc);
    // The provided buffers: the kernel picks one per receive, we hand it back once parsed.
    const std::size_t ring_bytes = kBuffers * sizeof(io_uring_buf);
    void* mem = mmap(nullptr, ring_bytes, PROT_READ | PROT_WRITE, MAP_ANONYMOUS | MAP_PRIVATE, -1, 0);
    if (mem == MAP_FAILED) die("mmap", errno);
    auto* br = static_cast<io_uring_buf_ring*>(mem);
    io_uring_buf_ring_init(br);
    io_uring_buf_reg reg{};
    reg.ring_addr = reinterpret_cast<unsigned long>(br);
    reg.ring_entries = kBuffers;
    reg.bgid = kGroup;
    if (int rc = io_uring_register_buf_ring(&ring, &reg, 0); rc < 0) die("io_uring_register_buf_ring", -rc);
    std::vector<char> storage(static_cast<std::size_t>(kBuffers) * kBufferSize);
    const int mask = io_uring_buf_ring_mask(kBuffers);
    for (unsigned b = 0; b < kBuffers; ++b) {
        io_uring_buf_ring_add(br, storage.data() + static_cast<std::size_t>(b) * kBufferSize, kBufferSize,
                              static_cast<unsigned short>(b), mask, static_cast<int>(b));
    }
    io_uring_buf_ring_advance(br, static_cast<int>(kBuffers));

    auto sqe_of = [&ring]() {
        io_uring_sqe* sqe = io_uring_get_sqe(&ring);
        if (sqe == nullptr) {  // full: hand what is queued to the kernel, then there is room
            io_uring_submit(&ring);
            sqe = io_uring_get_sqe(&ring);
        }
        return sqe;
    };
    auto arm_recv = [&](std::size_t i) {
        io_uring_sqe* sqe = sqe_of();
        io_uring_prep_recv_multishot(sqe, static_cast<int>(i), nullptr, 0, 0);
        sqe->flags |= IOSQE_FIXED_FILE | IOSQE_BUFFER_SELECT;
        sqe->buf_group = kGroup;
        io_uring_sqe_set_data64(sqe, i);
    };
    auto send_request = [&](std::size_t i) {
        io_uring_sqe* sqe = sqe_of();
        io_uring_prep_send(sqe, static_cast<int>(i), request.data(), request.size(), 0);
        sqe->flags |= IOSQE_FIXED_FILE | IOSQE_CQE_SKIP_SUCCESS;  // a completion only on failure
        io_uring_sqe_set_data64(sqe, (1ULL << 63) | i);
    };
    auto ready = [&](std::size_t i) {  // as in run_epoll
        if (open) {
            open->idle.push_back(i);
        } else {
            send_request(i);
        }
    };
    std::vector<ResponseCounter> counters(fds.size());
    for (std::size_t i = 0; i < fds.size(); ++i) {
        arm_recv(i);
        ready(i);
    }
    for (;;) {
        if (open) {
            const double now = now_s();
            open->release(now, send_request);
            __kernel_timespec ts{};
            const timespec span = span_of(open->wake_at() - now);
            ts.tv_sec = span.tv_sec;
            ts.tv_nsec = span.tv_nsec;
            io_uring_cqe* first = nullptr;
            const unsigned need = tick && !open->waiting() ? kUntilTimeout : 1;
            const int rc = io_uring_submit_and_wait_timeout(&ring, &first, need, &ts, nullptr);
            if (rc < 0 && rc != -ETIME && rc != -EINTR) die("io_uring_submit_and_wait_timeout", -rc);
        } else if (wait_nr <= 1) {
            if (int rc = io_uring_submit_and_wait(&ring, 1); rc < 0 && rc != -EINTR)
                die("io_uring_submit_and_wait", -rc);
        } else {
            __kernel_timespec ts{0, 100000};
            io_uring_cqe* first = nullptr;
            const int rc = io_uring_submit_and_wait_timeout(&ring, &first, wait_nr, &ts, nullptr);
            if (rc < 0 && rc != -ETIME && rc != -EINTR) die("io_uring_submit_and_wait_timeout", -rc);
        }
        int answered = 0;
        unsigned seen = 0, returned = 0;
        unsigned head;
        io_uring_cqe* cqe;
        io_uring_for_each_cqe(&ring, head, cqe) {
            seen += 1;
            const std::uint64_t tag = io_uring_cqe_get_data64(cqe);
            if (tag >> 63) die("send", -cqe->res);  // only failed sends post a completion
            const std::size_t i = tag;
            if (cqe->res <= 0) {
                if (cqe->res == -ENOBUFS) {  // every buffer in use: this batch returns them
                    arm_recv(i);
                    continue;
                }
                die("recv", cqe->res == 0 ? ECONNRESET : -cqe->res);
            }
            const unsigned bid = cqe->flags >> IORING_CQE_BUFFER_SHIFT;
            const char* data = storage.data() + static_cast<std::size_t>(bid) * kBufferSize;
            const int done = counters[i].feed(data, static_cast<std::size_t>(cqe->res));
            for (int k = 0; k < done; ++k) ready(i);
            answered += done;
            io_uring_buf_ring_add(br, const_cast<char*>(data), kBufferSize, static_cast<unsigned short>(bid), mask,
                                  static_cast<int>(returned));
            returned += 1;
            if (!(cqe->flags & IORING_CQE_F_MORE)) arm_recv(i);  // the multishot ended: re-arm
        }
        io_uring_buf_ring_cq_advance(&ring, br, static_cast<int>(returned));
        if (seen > returned) io_uring_cq_advance(&ring, seen - returned);
        if (!w.tick(answered)) break;
    }
    io_uring_queue_exit(&ring);
}

double percentile_us(std::vector<double>& v, double q) {
    if (v.empty()) return 0;
    const std::size_t k = static_cast<std::size_t>(q * static_cast<double>(v.size() - 1));
    std::nth_element(v.begin(), v.begin() + static_cast<long>(k), v.end());
    return v[k] * 1e6;
}

}  // namespace

int main(int argc, char** argv) {
    if (argc != 8 && argc != 9 && argc != 10) {
        std::fprintf(stderr, "usage: http1_loop MODE HOST PORT PATH CONNECTIONS WARMUP_S SECONDS [RATE [BATCH_US]]\n");
        return 2;
    }
    const std::string mode = argv[1];
    const char* host = argv[2];
    const int port = std::atoi(argv[3]);
    const std::string request = std::string("GET ") + argv[4] + " HTTP/1.1\r\nHost: " + host + "\r\n\r\n";
    const int connections = std::atoi(argv[5]);
    const double warmup = std::atof(argv[6]), seconds = std::atof(argv[7]);
    const double rate = argc >= 9 ? std::atof(argv[8]) : 0.0;
    const double batch_us = argc >= 10 ? std::atof(argv[9]) : 40.0;
    const bool open = rate > 0;
    // closed - epoll: 0; uring: 1; uring-waitN: N (at least N completions a wait)
    unsigned wait_nr = 0;
    bool uring = false, tick = false;
    if (open) {
        uring = mode == "uring" || mode == "uring-tick";
        tick = mode == "epoll-tick" || mode == "uring-tick";
        if (!uring && !tick && mode != "epoll") {
            std::fprintf(stderr, "http1_loop: open-loop mode %s is none of epoll, epoll-tick, uring, uring-tick\n",
                         mode.c_str());
            return 2;
        }
    } else if (mode == "uring") {
        uring = true, wait_nr = 1;
    } else if (mode.rfind("uring-wait", 0) == 0 && std::atoi(mode.c_str() + 10) > 1) {
        uring = true, wait_nr = static_cast<unsigned>(std::atoi(mode.c_str() + 10));
    } else if (mode != "epoll") {
        std::fprintf(stderr, "http1_loop: mode %s is none of epoll, uring, uring-waitN\n", mode.c_str());
        return 2;
    }
    prctl(PR_SET_TIMERSLACK, 1UL, 0, 0, 0);  // as the engine: wake-ups at their time, not 50 us later
    std::vector<int> fds;
    for (int c = 0; c < connections; ++c) fds.push_back(connect_to(host, port));
    const double t0 = now_s();
    Window w{t0 + warmup, t0 + warmup + seconds};
    Schedule schedule{t0, open ? 1.0 / rate : 0.0, batch_us * 1e-6, w.warmup_end};
    Schedule* sched = open ? &schedule : nullptr;
    if (uring) {
        run_uring(fds, request, w, wait_nr, sched, tick);
    } else {
        run_epoll(fds, request, w, sched, tick);
    }
    const double span = w.wall_end - w.wall_start;
    const double cpu = w.cpu_end - w.cpu_start;
    std::printf(
        "{\"mode\": \"%s\", \"connections\": %d, \"responses\": %ld, \"seconds\": %.6f, \"cpu_s\": %.6f, "
        "\"rps\": %.1f, \"cpu_us_per_response\": %.4f, \"batches\": %ld, \"responses_total\": %ld",
        mode.c_str(), connections, w.responses, span, cpu, w.responses / span,
        1e6 * cpu / static_cast<double>(w.responses), w.batches, w.answered_total);
    if (open) {
        const std::size_t sends = schedule.lateness.size();
        std::printf(
            ", \"rate\": %.1f, \"batch_us\": %.1f, \"sends\": %zu, \"lateness_p50_us\": %.1f, "
            "\"lateness_p99_us\": %.1f",
            rate, batch_us, sends, percentile_us(schedule.lateness, 0.5), percentile_us(schedule.lateness, 0.99));
    }
    std::printf("}\n");
    return 0;
}
