// The library of test/programs/nonpie_cxx.cc: its call of operator new goes through its own
// PLT to libstdc++'s definition.
#include <new>

__attribute__((visibility("default"))) void *lib_alloc(std::size_t size)
{
    return ::operator new(size);
}
