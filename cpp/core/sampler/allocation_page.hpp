#pragma once
// The allocation counter's shared-memory page: written by the LD_PRELOAD interposer
// (cpp/preload/allocation_counter.cpp) inside every process of a server's tree, read by the
// sampler (allocation_counts.cpp) at the edges of a window. One definition of the layout for both.
//
// One 4 KiB file per process image in the counter's directory (LOADBENCH_ALLOC_DIR), named
// "<pid>-<n>": a process that forks gets a page of its own in the child, one that execs a new
// page for the new image. Pages stay after their process exits, so the directory's sum covers
// every process the tree ever ran (like a cgroup's CPU accounting).
//
// A thread owns one slot while it lives and is the only writer of its counters: it increments
// them with plain relaxed stores (no lock, no atomic read-modify-write on the hot path). A slot
// freed by an exiting thread keeps its counts, and the next thread that claims it adds to them,
// so a page's sum never goes backwards. Threads beyond the slots share the overflow slot with
// atomic adds.
#include <cstdint>

namespace loadbench::allocation {

inline constexpr std::uint64_t kPageMagic = 0x3167617061636c61ULL;  // "alcapag1", little-endian
inline constexpr std::uint32_t kPageVersion = 1;
inline constexpr const char* kDirVariable = "LOADBENCH_ALLOC_DIR";

struct alignas(64) Counters {
    std::uint64_t calls;  // malloc, calloc, realloc, memalign family (operator new arrives here)
    std::uint64_t frees;  // free of a non-null pointer, and the old block of a moving realloc
    std::uint64_t bytes;  // bytes requested by those calls
    std::uint32_t owner;  // 0: free; else the kernel thread id that owns the slot
    std::uint32_t reserved;
};

struct alignas(64) PageHeader {
    std::uint64_t magic;
    std::uint32_t version;
    std::int32_t pid;
    std::uint32_t slots;  // thread slots in use by the layout (kThreadSlots)
};

inline constexpr std::uint32_t kThreadSlots = 62;

struct Page {
    PageHeader header;
    Counters overflow;  // threads beyond kThreadSlots: atomic adds
    Counters threads[kThreadSlots];
};

static_assert(sizeof(Counters) == 64);
static_assert(sizeof(Page) == 4096, "one page per process");

}  // namespace loadbench::allocation
