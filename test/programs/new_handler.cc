/*
 * operator new when memory runs out: a new_handler frees a reserve block (and uninstalls
 * itself), the retry fails again, and operator new throws bad_alloc, which the program
 * catches.  In the "oom" epoch the trace must show the handler's free of the reserve, and the
 * exception object's allocation and free; no free of an unknown block anywhere.
 */
#include <cstddef>
#include <cstdint>
#include <new>

#include "probe.h"

#define RESERVE_BYTES (1u << 20)

static void *reserve;

static void release_reserve()
{
    free(reserve);
    reserve = nullptr;
    std::set_new_handler(nullptr);
}

int main()
{
    phase("reserve");
    reserve = malloc(RESERVE_BYTES);
    keep(reserve);
    std::set_new_handler(release_reserve);
    phase("oom");
    int caught = 0;
    volatile std::size_t huge = SIZE_MAX / 4; /* the compiler must not see it coming */
    try {
        char *p = new char[huge];
        keep(p);
    } catch (const std::bad_alloc &) {
        caught = 1;
    }
    phase("end");
    if (!caught || reserve)
        die("new of an impossible size did not call the handler and throw");
    phases_print();
    return 0;
}
