// For test/t_attach_nonpie.sh: an executable built without PIE that takes the addresses of
// operator new and delete in its code, so that its dynamic symbols for them are canonical
// PLT entries, and allocates through them; and a library (nonpie_cxx_lib.cc) whose calls of
// operator new bind to libstdc++'s definition, not to that entry.  A line at a time from
// stdin: "exe N" allocates N blocks of 64 bytes through the pointer, "lib N" N blocks in the
// library, "free" deletes every block kept; "ok" after each.  Writes its pid first.
#include <cstdio>
#include <cstring>
#include <new>
#include <unistd.h>

void *lib_alloc(std::size_t size);

static void *(*volatile new_fn)(std::size_t);
static void (*volatile delete_fn)(void *);
static void *kept[4096];

int main()
{
    new_fn = &::operator new;
    delete_fn = &::operator delete;
    std::printf("%d\n", (int)getpid());
    std::fflush(stdout);
    char line[64];
    int n = 0, count;
    while (std::fgets(line, sizeof line, stdin)) {
        if (std::sscanf(line, "exe %d", &count) == 1)
            for (int i = 0; i < count && n < 4096; i++)
                kept[n++] = new_fn(64);
        else if (std::sscanf(line, "lib %d", &count) == 1)
            for (int i = 0; i < count && n < 4096; i++)
                kept[n++] = lib_alloc(64);
        else if (!std::strcmp(line, "free\n"))
            while (n)
                delete_fn(kept[--n]);
        std::printf("ok\n");
        std::fflush(stdout);
    }
    return 0;
}
