// The allocation counter's page reader: sums every complete page of the directory, skips files
// that are no page (being created, foreign), and refuses a directory it cannot read.
#include <stdlib.h>
#include <unistd.h>

#include <cstring>
#include <fstream>
#include <stdexcept>
#include <string>

#include <gtest/gtest.h>

#include "core/sampler/allocation_counts.hpp"
#include "core/sampler/allocation_page.hpp"

using namespace loadbench;

namespace {

std::string make_dir() {
    char name[] = "/tmp/loadbench-alloc-test-XXXXXX";
    const char* made = mkdtemp(name);
    if (made == nullptr) throw std::runtime_error("mkdtemp failed");
    return made;
}

void write_page(const std::string& path, int pid, std::uint64_t per_slot, std::uint64_t overflow) {
    allocation::Page page;
    std::memset(&page, 0, sizeof page);
    page.header.magic = allocation::kPageMagic;
    page.header.version = allocation::kPageVersion;
    page.header.pid = pid;
    page.header.slots = allocation::kThreadSlots;
    page.threads[0] = {per_slot, per_slot, 10 * per_slot, 1, 0};
    page.threads[allocation::kThreadSlots - 1] = {per_slot, 0, per_slot, 0, 0};  // freed slot keeps counts
    page.overflow = {overflow, overflow, overflow, 0, 0};
    std::ofstream(path, std::ios::binary).write(reinterpret_cast<const char*>(&page), sizeof page);
}

TEST(AllocationCounts, SumsEveryPageAndSkipsWhatIsNoPage) {
    const std::string dir = make_dir();
    write_page(dir + "/100-0", 100, 5, 1);
    write_page(dir + "/100-1", 100, 7, 0);           // the same pid after exec: a second image
    std::ofstream(dir + "/101-0") << "half a page";  // being created: skipped
    std::ofstream(dir + "/foreign", std::ios::binary) << std::string(sizeof(allocation::Page), 'x');
    const auto totals = sampler::read_allocation_pages(dir);
    EXPECT_EQ(totals.calls, (5u + 5u + 1u) + (7u + 7u));
    EXPECT_EQ(totals.frees, (5u + 1u) + 7u);
    EXPECT_EQ(totals.bytes, (50u + 5u + 1u) + (70u + 7u));
    EXPECT_EQ(totals.pids.size(), 2u);
    EXPECT_EQ(system(("rm -rf " + dir).c_str()), 0);
}

TEST(AllocationCounts, AMissingDirectoryIsOneClearError) {
    try {
        sampler::read_allocation_pages("/nonexistent/loadbench-alloc");
        FAIL() << "no exception";
    } catch (const std::invalid_argument& e) {
        EXPECT_NE(std::string(e.what()).find("allocation counter's directory"), std::string::npos);
    }
}

}  // namespace
