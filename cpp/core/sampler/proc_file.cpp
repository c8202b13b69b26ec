#include "core/sampler/proc_file.hpp"

#include <fcntl.h>
#include <unistd.h>

#include <cerrno>
#include <charconv>

namespace loadbench::sampler {

FileDescriptor& FileDescriptor::operator=(FileDescriptor&& other) noexcept {
    if (this != &other) {
        reset();
        fd_ = other.release();
    }
    return *this;
}

FileDescriptor::~FileDescriptor() { reset(); }

int FileDescriptor::release() {
    const int fd = fd_;
    fd_ = -1;
    return fd;
}

void FileDescriptor::reset() {
    if (fd_ >= 0) ::close(fd_);
    fd_ = -1;
}

FileDescriptor open_read_only(int dir_fd, const char* path) {
    return FileDescriptor(::openat(dir_fd, path, O_RDONLY | O_CLOEXEC));
}

FileDescriptor open_directory(int dir_fd, const char* path) {
    return FileDescriptor(::openat(dir_fd, path, O_RDONLY | O_DIRECTORY | O_CLOEXEC));
}

ReadResult read_whole(const FileDescriptor& file, std::vector<char>& buffer) {
    ReadResult result;
    if (!file.is_open()) {
        result.error = EBADF;
        return result;
    }
    if (buffer.size() < 4096) buffer.resize(4096);
    for (;;) {
        // /proc files are generated on read; reading at offset 0 regenerates them, and one
        // read that does not fill the buffer holds the whole file.
        const ssize_t n = ::pread(file.get(), buffer.data(), buffer.size(), 0);
        if (n < 0) {
            if (errno == EINTR) continue;
            result.error = errno;
            return result;
        }
        if (static_cast<size_t>(n) < buffer.size()) {
            result.ok = true;
            result.text = std::string_view(buffer.data(), static_cast<size_t>(n));
            return result;
        }
        buffer.resize(buffer.size() * 2);
    }
}

long count_entries(const FileDescriptor& dir, std::vector<char>& buffer) {
    return for_each_entry(dir, buffer, [](std::string_view) {});
}

int parse_pid_name(std::string_view name) {
    int pid = 0;
    const auto [end, ec] = std::from_chars(name.data(), name.data() + name.size(), pid);
    if (ec != std::errc() || end != name.data() + name.size() || pid <= 0) return 0;
    return pid;
}

}  // namespace loadbench::sampler
