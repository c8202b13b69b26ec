#pragma once
// Per-worker free lists of read buffers and output strings.
//
// Why: an idle keep-alive connection should cost what nginx's does (a few hundred bytes),
// not a read buffer and an output buffer it is not using. A plain HTTP/1.1 connection takes
// a read buffer only when bytes are there to read, and both buffers go back here as soon
// as it waits for a next request with nothing pending. One worker thread handles one
// connection at a time, so under keep-alive load a couple of buffers circulate through
// these lists: no malloc/free per request. The lists keep at most `keep` entries, so a burst
// of many simultaneously busy connections does not stay resident once they go idle.
// Single-threaded: only the owning worker's thread touches it.
#include <cstddef>
#include <string>
#include <utility>
#include <vector>

namespace loadbench::server {

class ReadBufferPool {
public:
    ReadBufferPool(std::size_t buffer_size, std::size_t keep) : buffer_size_(buffer_size), keep_(keep) {
        free_.reserve(keep);
    }
    ~ReadBufferPool() {
        for (char* buffer : free_) delete[] buffer;
    }
    ReadBufferPool(const ReadBufferPool&) = delete;
    ReadBufferPool& operator=(const ReadBufferPool&) = delete;

    std::size_t buffer_size() const { return buffer_size_; }

    char* take() {
        if (free_.empty()) return new char[buffer_size_];
        char* buffer = free_.back();
        free_.pop_back();
        return buffer;
    }
    void give(char* buffer) {
        if (buffer == nullptr) return;
        if (free_.size() < keep_) {
            free_.push_back(buffer);
        } else {
            delete[] buffer;
        }
    }
    std::size_t cached() const { return free_.size(); }

private:
    std::size_t buffer_size_;
    std::size_t keep_;
    std::vector<char*> free_;
};

class OutputBufferPool {
public:
    OutputBufferPool(std::size_t initial_capacity, std::size_t max_kept_capacity, std::size_t keep)
        : initial_capacity_(initial_capacity), max_kept_capacity_(max_kept_capacity), keep_(keep) {
        free_.reserve(keep);
    }

    // An empty string with room for a typical response (moved out: no copy).
    std::string take() {
        if (free_.empty()) {
            std::string s;
            s.reserve(initial_capacity_);
            return s;
        }
        std::string s = std::move(free_.back());
        free_.pop_back();
        return s;
    }
    // Takes `s`'s storage (leaving it empty, without heap storage). One that grew large
    // (a big echo body) is freed rather than kept, so the list stays small.
    void give(std::string& s) {
        if (s.capacity() >= initial_capacity_ && s.capacity() <= max_kept_capacity_ && free_.size() < keep_) {
            s.clear();
            free_.push_back(std::move(s));
        }
        std::string().swap(s);
    }

private:
    std::size_t initial_capacity_;
    std::size_t max_kept_capacity_;
    std::size_t keep_;
    std::vector<std::string> free_;
};

}  // namespace loadbench::server
