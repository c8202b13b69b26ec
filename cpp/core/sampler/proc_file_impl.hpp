#pragma once
// Template part of proc_file.hpp: directory listing without allocation per call.
#include <dirent.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>

namespace loadbench::sampler {

template <typename OnEntry>
long for_each_entry(const FileDescriptor& dir, std::vector<char>& buffer, OnEntry&& on_entry) {
    if (!dir.is_open()) {
        errno = EBADF;
        return -1;
    }
    if (buffer.size() < 32768) buffer.resize(32768);
    if (::lseek(dir.get(), 0, SEEK_SET) < 0) return -1;
    long count = 0;
    for (;;) {
        const ssize_t n = ::getdents64(dir.get(), buffer.data(), buffer.size());
        if (n < 0) return -1;
        if (n == 0) break;
        for (ssize_t offset = 0; offset < n;) {
            const auto* entry = reinterpret_cast<const struct dirent64*>(buffer.data() + offset);
            offset += entry->d_reclen;
            const char* name = entry->d_name;
            if (name[0] == '.' && (name[1] == '\0' || (name[1] == '.' && name[2] == '\0'))) continue;
            ++count;
            on_entry(std::string_view(name, std::strlen(name)));
        }
    }
    return count;
}

}  // namespace loadbench::sampler
