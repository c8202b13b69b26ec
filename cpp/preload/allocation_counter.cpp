// libloadbench_alloc.so: counts a process's heap allocations for loadbench's sampler.
//
// Injected with LD_PRELOAD into a server loadbench starts with allocation counting on (every
// process of its tree inherits the variable). It interposes the C allocator's entry points and
// forwards each call to glibc's own implementation (__libc_malloc & co., exported for exactly
// this), counting the call first into the calling thread's slot of a shared-memory page
// (core/sampler/allocation_page.hpp) that the sampler reads from outside at a window's edges.
// operator new/delete (libstdc++) and libc's internal allocations call malloc/free through the
// dynamic linker, so they arrive here as well.
//
// What it cannot see: a statically linked executable (LD_PRELOAD is not applied: Go), and
// allocators that take memory from the kernel themselves or keep their own free lists on top of
// malloc (V8's heap, pymalloc's arenas, a bundled jemalloc/mimalloc): loadbench reports those
// as "n/a" or says what the figure covers.
//
// Constraints of an allocator interposer, and how they are met:
// - No allocation from inside: no std library, no stdio; the page's path is built by hand.
// - Initial-exec TLS: no __tls_get_addr (which may allocate) on the hot path.
// - Reentrancy: while a thread claims its slot (pthread_setspecific may allocate) its own
//   calls pass through uncounted; so do calls of other threads while the page is being made.
// - fork(): the child gets a page of its own (pthread_atfork), so two processes never write
//   the same slot. exec(): the new image loads the library again and makes a new page.
// Built without the C++ runtime (no exceptions, no RTTI, linked by the C driver), so a C
// server such as nginx does not load libstdc++ because of it.
#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <sys/mman.h>
#include <sys/syscall.h>
#include <unistd.h>

#include "core/sampler/allocation_page.hpp"

extern "C" {
void* __libc_malloc(size_t size);
void* __libc_calloc(size_t count, size_t size);
void* __libc_realloc(void* ptr, size_t size);
void __libc_free(void* ptr);
void* __libc_memalign(size_t alignment, size_t size);
void* __libc_valloc(size_t size);
void* __libc_pvalloc(size_t size);
}

namespace {

using loadbench::allocation::Counters;
using loadbench::allocation::Page;

enum State : int { kUnset = 0, kStarting = 1, kCounting = 2, kOff = 3 };

int g_state = kUnset;  // process-wide; __atomic builtins only
Page* g_page = nullptr;
pthread_key_t g_slot_key;
bool g_once_done = false;  // the key and the fork handler exist (they survive fork)

__thread Counters* t_slot __attribute__((tls_model("initial-exec"))) = nullptr;
__thread bool t_shared __attribute__((tls_model("initial-exec"))) = false;  // t_slot is the overflow
__thread bool t_busy __attribute__((tls_model("initial-exec"))) = false;

// "<dir>/<pid>-<n>" into out (size cap); false when it does not fit.
bool page_path(char* out, size_t cap, const char* dir, long pid, unsigned n) {
    size_t at = 0;
    for (const char* c = dir; *c; ++c) {
        if (at + 1 >= cap) return false;
        out[at++] = *c;
    }
    auto put_number = [&](unsigned long value) {
        char digits[24];
        int count = 0;
        do {
            digits[count++] = static_cast<char>('0' + value % 10);
            value /= 10;
        } while (value != 0);
        while (count > 0) {
            if (at + 1 >= cap) return false;
            out[at++] = digits[--count];
        }
        return true;
    };
    if (at + 1 >= cap) return false;
    out[at++] = '/';
    if (!put_number(static_cast<unsigned long>(pid))) return false;
    if (at + 1 >= cap) return false;
    out[at++] = '-';
    if (!put_number(n)) return false;
    out[at] = '\0';
    return true;
}

Page* make_page() {
    const char* dir = getenv(loadbench::allocation::kDirVariable);
    if (dir == nullptr || *dir == '\0') return nullptr;
    const long pid = static_cast<long>(getpid());
    char path[4096];
    int fd = -1;
    for (unsigned n = 0; n < 1000 && fd < 0; ++n) {  // a new image of the same pid: the next n
        if (!page_path(path, sizeof path, dir, pid, n)) return nullptr;
        fd = open(path, O_RDWR | O_CREAT | O_EXCL | O_CLOEXEC, 0600);
        if (fd < 0 && errno != EEXIST) return nullptr;
    }
    if (fd < 0) return nullptr;
    void* mapped = MAP_FAILED;
    if (ftruncate(fd, sizeof(Page)) == 0)
        mapped = mmap(nullptr, sizeof(Page), PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
    close(fd);
    if (mapped == MAP_FAILED) {
        unlink(path);
        return nullptr;
    }
    Page* page = static_cast<Page*>(mapped);  // zero-filled by ftruncate
    page->header.version = loadbench::allocation::kPageVersion;
    page->header.pid = static_cast<int32_t>(pid);
    page->header.slots = loadbench::allocation::kThreadSlots;
    // the magic last: a reader that sees it sees a complete header
    __atomic_store_n(&page->header.magic, loadbench::allocation::kPageMagic, __ATOMIC_RELEASE);
    return page;
}

void release_slot(void* slot) {
    // The thread exits: the slot keeps its counts for the next owner (sums never go back).
    auto* counters = static_cast<Counters*>(slot);
    if (counters != nullptr && !t_shared) __atomic_store_n(&counters->owner, 0u, __ATOMIC_RELEASE);
    t_slot = nullptr;
    t_shared = false;
}

void after_fork_in_child();

Page* page() {
    int state = __atomic_load_n(&g_state, __ATOMIC_ACQUIRE);
    if (state == kCounting) return g_page;
    if (state != kUnset) return nullptr;
    if (!__atomic_compare_exchange_n(&g_state, &state, kStarting, false, __ATOMIC_ACQ_REL, __ATOMIC_ACQUIRE))
        return nullptr;  // another thread makes the page; this call goes uncounted
    t_busy = true;
    g_page = make_page();
    if (g_page != nullptr && !g_once_done) {
        g_once_done = true;
        if (pthread_key_create(&g_slot_key, release_slot) != 0 ||
            pthread_atfork(nullptr, nullptr, after_fork_in_child) != 0) {
            g_page = nullptr;  // without both, counts could be lost or written twice: off
        }
    }
    t_busy = false;
    __atomic_store_n(&g_state, g_page != nullptr ? kCounting : kOff, __ATOMIC_RELEASE);
    return g_page;
}

void after_fork_in_child() {
    // Only the forking thread lives on, still holding a slot of the parent's page: drop the
    // parent's mapping and start a page for this process.
    Page* parent = g_page;
    g_page = nullptr;
    t_slot = nullptr;
    t_shared = false;
    __atomic_store_n(&g_state, kUnset, __ATOMIC_RELEASE);
    if (parent != nullptr) munmap(parent, sizeof(Page));
    pthread_setspecific(g_slot_key, nullptr);
    page();  // now, not at the first call: a child that has not allocated yet is still seen
}

// The page exists from the image's start, so the sampler can tell "loaded, no call yet" from
// "not loaded" (a statically linked program never runs this).
__attribute__((constructor)) void make_page_at_load() { page(); }

Counters* claim_slot(Page* p) {
    t_busy = true;
    const auto tid = static_cast<uint32_t>(syscall(SYS_gettid));
    Counters* slot = nullptr;
    for (auto& candidate : p->threads) {
        uint32_t expected = 0;
        if (__atomic_compare_exchange_n(&candidate.owner, &expected, tid, false, __ATOMIC_ACQ_REL, __ATOMIC_RELAXED)) {
            slot = &candidate;
            break;
        }
    }
    t_shared = slot == nullptr;
    t_slot = slot != nullptr ? slot : &p->overflow;
    pthread_setspecific(g_slot_key, t_slot);  // its destructor frees the slot at thread exit
    t_busy = false;
    return t_slot;
}

inline void bump(uint64_t* counter, uint64_t by) {
    if (t_shared)
        __atomic_fetch_add(counter, by, __ATOMIC_RELAXED);
    else  // the slot's only writer: a plain store the sampler can read whole
        __atomic_store_n(counter, *counter + by, __ATOMIC_RELAXED);
}

inline void count(uint64_t calls, uint64_t frees, uint64_t bytes) {
    if (t_busy) return;
    Counters* slot = t_slot;
    if (slot == nullptr) {
        Page* p = page();
        if (p == nullptr) return;
        slot = claim_slot(p);
    }
    if (calls != 0) bump(&slot->calls, calls);
    if (frees != 0) bump(&slot->frees, frees);
    if (bytes != 0) bump(&slot->bytes, bytes);
}

bool valid_alignment(size_t alignment) { return alignment != 0 && (alignment & (alignment - 1)) == 0; }

}  // namespace

extern "C" {

__attribute__((visibility("default"))) void* malloc(size_t size) {
    void* p = __libc_malloc(size);
    if (p != nullptr) count(1, 0, size);
    return p;
}

__attribute__((visibility("default"))) void free(void* ptr) {
    if (ptr != nullptr) count(0, 1, 0);
    __libc_free(ptr);
}

__attribute__((visibility("default"))) void* calloc(size_t count_, size_t size) {
    void* p = __libc_calloc(count_, size);
    if (p != nullptr) count(1, 0, static_cast<uint64_t>(count_) * size);
    return p;
}

// realloc(NULL, n) is an allocation; realloc(p, 0) a free (glibc frees p); realloc(p, n) counts
// as one allocation of n bytes and one free, so calls - frees stays the number of live blocks.
__attribute__((visibility("default"))) void* realloc(void* ptr, size_t size) {
    void* p = __libc_realloc(ptr, size);
    if (ptr == nullptr) {
        if (p != nullptr) count(1, 0, size);
    } else if (size == 0) {
        count(0, 1, 0);
    } else if (p != nullptr) {
        count(1, 1, size);
    }
    return p;
}

__attribute__((visibility("default"))) void* reallocarray(void* ptr, size_t count_, size_t size) {
    size_t total = 0;
    if (__builtin_mul_overflow(count_, size, &total)) {
        errno = ENOMEM;
        return nullptr;
    }
    return realloc(ptr, total);
}

__attribute__((visibility("default"))) void* memalign(size_t alignment, size_t size) {
    void* p = __libc_memalign(alignment, size);
    if (p != nullptr) count(1, 0, size);
    return p;
}

__attribute__((visibility("default"))) void* aligned_alloc(size_t alignment, size_t size) {
    if (!valid_alignment(alignment)) {
        errno = EINVAL;
        return nullptr;
    }
    return memalign(alignment, size);
}

__attribute__((visibility("default"))) int posix_memalign(void** out, size_t alignment, size_t size) {
    if (!valid_alignment(alignment) || alignment % sizeof(void*) != 0) return EINVAL;
    void* p = __libc_memalign(alignment, size);
    if (p == nullptr) return ENOMEM;
    count(1, 0, size);
    *out = p;
    return 0;
}

__attribute__((visibility("default"))) void* valloc(size_t size) {
    void* p = __libc_valloc(size);
    if (p != nullptr) count(1, 0, size);
    return p;
}

__attribute__((visibility("default"))) void* pvalloc(size_t size) {
    void* p = __libc_pvalloc(size);
    if (p != nullptr) count(1, 0, size);
    return p;
}

}  // extern "C"
