/*
 * Every replaceable C++ allocation function, each in its own epoch with its own count: pair i
 * makes COUNT(i) objects of SIZE(i) bytes with one operator new variant and frees them with
 * one operator delete variant, so the trace must show exactly COUNT(i) allocations and frees
 * in that epoch whichever allocator (glibc, tcmalloc, jemalloc) sits below the shim.  The
 * operators are called by name so that the requested size is exact (no array cookie).  A last
 * epoch asks nothrow new for an impossible size: a failed allocation is not an allocation.
 */
#include <cstddef>
#include <cstdint>
#include <new>

#include "probe.h"

static const std::size_t kMaxCount = 32;

struct pair_case {
    const char *name;
    std::size_t size;
    std::size_t align; /* 0: not an aligned variant */
    void *(*make)(std::size_t size, std::size_t align);
    void (*drop)(void *p, std::size_t size, std::size_t align);
};

static std::align_val_t al(std::size_t a)
{
    return static_cast<std::align_val_t>(a);
}

static const pair_case cases[] = {
    {"new_delete", 40, 0, [](std::size_t n, std::size_t) { return ::operator new(n); },
     [](void *p, std::size_t, std::size_t) { ::operator delete(p); }},
    {"new_sized_delete", 56, 0, [](std::size_t n, std::size_t) { return ::operator new(n); },
     [](void *p, std::size_t n, std::size_t) { ::operator delete(p, n); }},
    {"array_delete", 72, 0, [](std::size_t n, std::size_t) { return ::operator new[](n); },
     [](void *p, std::size_t, std::size_t) { ::operator delete[](p); }},
    {"array_sized_delete", 88, 0,
     [](std::size_t n, std::size_t) { return ::operator new[](n); },
     [](void *p, std::size_t n, std::size_t) { ::operator delete[](p, n); }},
    {"nothrow", 104, 0,
     [](std::size_t n, std::size_t) { return ::operator new(n, std::nothrow); },
     [](void *p, std::size_t, std::size_t) { ::operator delete(p, std::nothrow); }},
    {"array_nothrow", 120, 0,
     [](std::size_t n, std::size_t) { return ::operator new[](n, std::nothrow); },
     [](void *p, std::size_t, std::size_t) { ::operator delete[](p, std::nothrow); }},
    {"aligned", 136, 64,
     [](std::size_t n, std::size_t a) { return ::operator new(n, al(a)); },
     [](void *p, std::size_t, std::size_t a) { ::operator delete(p, al(a)); }},
    {"aligned_sized_delete", 152, 128,
     [](std::size_t n, std::size_t a) { return ::operator new(n, al(a)); },
     [](void *p, std::size_t n, std::size_t a) { ::operator delete(p, n, al(a)); }},
    {"aligned_array", 168, 256,
     [](std::size_t n, std::size_t a) { return ::operator new[](n, al(a)); },
     [](void *p, std::size_t, std::size_t a) { ::operator delete[](p, al(a)); }},
    {"aligned_array_sized_delete", 184, 512,
     [](std::size_t n, std::size_t a) { return ::operator new[](n, al(a)); },
     [](void *p, std::size_t n, std::size_t a) { ::operator delete[](p, n, al(a)); }},
    {"aligned_nothrow", 200, 1024,
     [](std::size_t n, std::size_t a) { return ::operator new(n, al(a), std::nothrow); },
     [](void *p, std::size_t, std::size_t a) { ::operator delete(p, al(a), std::nothrow); }},
    {"aligned_array_nothrow", 216, 4096,
     [](std::size_t n, std::size_t a) { return ::operator new[](n, al(a), std::nothrow); },
     [](void *p, std::size_t, std::size_t a) { ::operator delete[](p, al(a), std::nothrow); }},
};

static const std::size_t kCases = sizeof cases / sizeof cases[0];

static std::size_t count_of(std::size_t i)
{
    return 3 + 2 * i;
}

static __attribute__((noinline)) void run_case(std::size_t i)
{
    const pair_case &c = cases[i];
    void *objects[kMaxCount];
    std::size_t count = count_of(i);
    for (std::size_t k = 0; k < count; k++) {
        void *p = c.make(c.size, c.align);
        if (!p)
            die("%s: allocation %zu returned NULL", c.name, k);
        if (c.align && reinterpret_cast<std::uintptr_t>(p) % c.align)
            die("%s: %p is not aligned to %zu", c.name, p, c.align);
        fill(p, c.size, static_cast<unsigned>(k));
        objects[k] = p;
    }
    for (std::size_t k = 0; k < count; k++) {
        if (!filled(objects[k], c.size, static_cast<unsigned>(k)))
            die("%s: object %zu was overwritten", c.name, k);
        keep(objects[k]);
        c.drop(objects[k], c.size, c.align);
    }
}

static __attribute__((noinline)) void impossible_nothrow(void)
{
    std::size_t huge = SIZE_MAX / 2;
    void *p = ::operator new(huge, std::nothrow);
    void *q = ::operator new[](huge, std::nothrow);
    void *r = ::operator new(huge, al(64), std::nothrow);
    keep(p);
    keep(q);
    keep(r);
    if (p || q || r)
        die("nothrow new of %zu bytes succeeded", huge);
}

int main()
{
    static_assert(3 + 2 * (sizeof cases / sizeof cases[0] - 1) <= kMaxCount, "counts fit");
    for (std::size_t i = 0; i < kCases; i++) {
        phase(cases[i].name);
        run_case(i);
    }
    phase("impossible_nothrow");
    impossible_nothrow();
    phase("end");
    phases_print();
    for (std::size_t i = 0; i < kCases; i++)
        printf("case %s %zu %zu\n", cases[i].name, count_of(i), cases[i].size);
    return 0;
}
