// Every replaceable operator new and delete, defined by the program on own_malloc.c's
// allocator (linked with test/programs/new_delete.cc): the executable's operators are what
// every new binds to, so libchurn sees them only through the patch way.
#include <cstdlib>
#include <new>

extern "C" {
void *malloc(std::size_t);
void *aligned_alloc(std::size_t, std::size_t);
void free(void *);
}

static void *must(void *p)
{
    if (!p)
        throw std::bad_alloc();
    return p;
}

static std::size_t a(std::align_val_t al) { return static_cast<std::size_t>(al); }

__attribute__((noinline)) void *operator new(std::size_t n) { return must(malloc(n)); }
__attribute__((noinline)) void *operator new[](std::size_t n) { return must(malloc(n)); }
__attribute__((noinline)) void *operator new(std::size_t n, const std::nothrow_t &) noexcept
{
    return malloc(n);
}
__attribute__((noinline)) void *operator new[](std::size_t n, const std::nothrow_t &) noexcept
{
    return malloc(n);
}
__attribute__((noinline)) void *operator new(std::size_t n, std::align_val_t al)
{
    return must(aligned_alloc(a(al), n));
}
__attribute__((noinline)) void *operator new[](std::size_t n, std::align_val_t al)
{
    return must(aligned_alloc(a(al), n));
}
__attribute__((noinline)) void *operator new(std::size_t n, std::align_val_t al,
                                             const std::nothrow_t &) noexcept
{
    return aligned_alloc(a(al), n);
}
__attribute__((noinline)) void *operator new[](std::size_t n, std::align_val_t al,
                                               const std::nothrow_t &) noexcept
{
    return aligned_alloc(a(al), n);
}

__attribute__((noinline)) void operator delete(void *p) noexcept { free(p); }
__attribute__((noinline)) void operator delete[](void *p) noexcept { free(p); }
__attribute__((noinline)) void operator delete(void *p, std::size_t) noexcept { free(p); }
__attribute__((noinline)) void operator delete[](void *p, std::size_t) noexcept { free(p); }
__attribute__((noinline)) void operator delete(void *p, const std::nothrow_t &) noexcept
{
    free(p);
}
__attribute__((noinline)) void operator delete[](void *p, const std::nothrow_t &) noexcept
{
    free(p);
}
__attribute__((noinline)) void operator delete(void *p, std::align_val_t) noexcept { free(p); }
__attribute__((noinline)) void operator delete[](void *p, std::align_val_t) noexcept { free(p); }
__attribute__((noinline)) void operator delete(void *p, std::size_t, std::align_val_t) noexcept
{
    free(p);
}
__attribute__((noinline)) void operator delete[](void *p, std::size_t, std::align_val_t) noexcept
{
    free(p);
}
__attribute__((noinline)) void operator delete(void *p, std::align_val_t,
                                               const std::nothrow_t &) noexcept
{
    free(p);
}
__attribute__((noinline)) void operator delete[](void *p, std::align_val_t,
                                                 const std::nothrow_t &) noexcept
{
    free(p);
}
