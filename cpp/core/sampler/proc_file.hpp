#pragma once
// Open-once /proc readers. The sampling thread keeps its /proc files open and re-reads them
// with pread(…, 0) into one reusable buffer: one syscall per file per sample and no
// allocation once the buffer has grown to the largest file. A file of a process that has
// exited fails with ESRCH, never with the content of a new process that reused the pid.
#include <cstddef>
#include <string_view>
#include <vector>

namespace loadbench::sampler {

// An owned file descriptor (closed on destruction, movable).
class FileDescriptor {
public:
    FileDescriptor() = default;
    explicit FileDescriptor(int fd) : fd_(fd) {}
    FileDescriptor(FileDescriptor&& other) noexcept : fd_(other.release()) {}
    FileDescriptor& operator=(FileDescriptor&& other) noexcept;
    FileDescriptor(const FileDescriptor&) = delete;
    FileDescriptor& operator=(const FileDescriptor&) = delete;
    ~FileDescriptor();

    int get() const { return fd_; }
    bool is_open() const { return fd_ >= 0; }
    int release();
    void reset();

private:
    int fd_ = -1;
};

// Opens `path` (relative to `dir_fd`, or absolute with dir_fd = AT_FDCWD) read-only.
// Returns a closed descriptor on failure; errno tells why.
FileDescriptor open_read_only(int dir_fd, const char* path);
FileDescriptor open_directory(int dir_fd, const char* path);

// Reads the whole file from offset 0 into `buffer` (grown when the file does not fit) and
// returns a view of the bytes read; an empty optional-like view with ok=false on error.
struct ReadResult {
    bool ok = false;
    int error = 0;  // errno when !ok
    std::string_view text;
};
ReadResult read_whole(const FileDescriptor& file, std::vector<char>& buffer);

// Lists the entries of an open directory from its start (lseek 0 + getdents64), calling
// `on_entry(name)` for each except "." and ".."; returns the number of entries, or -1 with
// errno set when the directory can no longer be read (its process exited).
template <typename OnEntry>
long for_each_entry(const FileDescriptor& dir, std::vector<char>& buffer, OnEntry&& on_entry);

long count_entries(const FileDescriptor& dir, std::vector<char>& buffer);

// Parses a decimal pid/tid directory name; 0 for anything that is not one.
int parse_pid_name(std::string_view name);

}  // namespace loadbench::sampler

#include "core/sampler/proc_file_impl.hpp"
