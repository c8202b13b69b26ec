#pragma once
// Reads the allocation counter's pages (allocation_page.hpp) of one server tree: the sums over
// every process that loaded the counter since the directory was made, exited ones included.
#include <cstdint>
#include <string>
#include <vector>

namespace loadbench::sampler {

struct AllocationTotals {
    std::uint64_t calls = 0;
    std::uint64_t frees = 0;
    std::uint64_t bytes = 0;
    std::vector<int> pids;  // processes with a page (a pid twice: it exec'd a new image)
};

// Sums every page in `dir`. A file that is not a complete page (being created) is skipped; a
// directory that cannot be read gives std::invalid_argument with the reason.
AllocationTotals read_allocation_pages(const std::string& dir);

}  // namespace loadbench::sampler
