#include "core/sampler/allocation_counts.hpp"

#include <dirent.h>
#include <fcntl.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <string>
#include <stdexcept>

#include "core/sampler/allocation_page.hpp"

namespace loadbench::sampler {

namespace {

// One pread of the whole page: each 64-bit counter is written by one store, so it is read whole;
// the three counters of a slot may be one call apart, which a window of thousands does not see.
bool read_page(int dir_fd, const char* name, AllocationTotals& out) {
    using allocation::Page;
    const int fd = openat(dir_fd, name, O_RDONLY | O_CLOEXEC);
    if (fd < 0) return false;
    Page page;
    const ssize_t got = pread(fd, &page, sizeof(Page), 0);
    close(fd);
    if (got != static_cast<ssize_t>(sizeof(Page))) return false;
    if (page.header.magic != allocation::kPageMagic || page.header.version != allocation::kPageVersion) return false;
    auto add = [&out](const allocation::Counters& c) {
        out.calls += c.calls;
        out.frees += c.frees;
        out.bytes += c.bytes;
    };
    add(page.overflow);
    for (const auto& slot : page.threads) add(slot);
    out.pids.push_back(page.header.pid);
    return true;
}

}  // namespace

AllocationTotals read_allocation_pages(const std::string& dir) {
    DIR* listing = opendir(dir.c_str());
    if (listing == nullptr)
        throw std::invalid_argument("cannot read the allocation counter's directory " + dir + ": " +
                                    std::strerror(errno));
    AllocationTotals totals;
    const int dir_fd = dirfd(listing);
    while (const dirent* entry = readdir(listing)) {
        if (entry->d_name[0] == '.') continue;
        read_page(dir_fd, entry->d_name, totals);
    }
    closedir(listing);
    return totals;
}

}  // namespace loadbench::sampler
