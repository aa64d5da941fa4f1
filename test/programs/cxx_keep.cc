/*
 * A C++ program with two kinds of objects live at exit: a cache it keeps on purpose
 * (cache_forever, which a suppression file names) and strings it forgets (forget_some), on
 * top of what libstdc++ allocates for itself when it is loaded (its emergency exception
 * pool).  Prints `expect NAME COUNT BYTES` for the objects each function leaves live.
 */
#include <cstdio>
#include <string>
#include <vector>

static std::vector<std::string *> kept;

__attribute__((noinline)) void cache_forever(int i)
{
    kept.push_back(new std::string(200 + i, 'c'));
}

__attribute__((noinline)) std::string *forget_some(int i)
{
    return new std::string(100 + i, 'f');
}

int main()
{
    kept.reserve(16);
    std::string *last = nullptr;
    for (int i = 0; i < 16; i++)
        cache_forever(i);
    for (int i = 0; i < 8; i++)
        last = forget_some(i);
    std::printf("%zu %zu\n", kept.size(), last->size());
    return 0;
}
