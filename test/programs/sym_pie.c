/*
 * Symbolization test program (C, built as PIE at -O0 so each call is the last instruction of
 * its line and a return address falls on the next line): prints its module map and return
 * addresses captured in known functions, then dlopens the library named by argv[1], prints
 * the map again and addresses captured inside the library and inside libc.
 * Lines marked MARK:<label> are where the test expects each address to resolve.
 */
#include <dlfcn.h>
#include <stdlib.h>

#include "modmap.h"

static volatile int counter;

__attribute__((noinline)) static void record(const char *label)
{
    modmap_print_ip(label, __builtin_return_address(0), 1);
}

__attribute__((noinline)) static void parse_request(void)
{
    record("parse"); /* MARK:parse */
    counter++;
}

__attribute__((noinline)) static void build_reply(void)
{
    record("reply"); /* MARK:reply */
    counter += 2;
#ifdef REBUILT
    counter *= 3;
#endif
}

/* Called by qsort: its return address is inside libc, whose debug info is separate. */
static int by_value(const void *a, const void *b)
{
    static int recorded;
    if (!recorded++)
        modmap_print_ip("libc", __builtin_return_address(0), 1);
    return *(const int *)a - *(const int *)b;
}

int main(int argc, char **argv)
{
    if (argc != 2) {
        fputs("usage: sym_pie LIBRARY\n", stderr);
        return 2;
    }
    modmap_print();
    parse_request();
    build_reply();
    modmap_print_ip("entry", (const void *)build_reply, 0);

    void *lib = dlopen(argv[1], RTLD_NOW);
    if (!lib) {
        fprintf(stderr, "sym_pie: %s\n", dlerror());
        return 1;
    }
    void (*lib_work)(void (*)(const char *)) =
        (void (*)(void (*)(const char *)))dlsym(lib, "lib_work");
    if (!lib_work) {
        fprintf(stderr, "sym_pie: %s\n", dlerror());
        return 1;
    }
    lib_work(record);
    modmap_print();

    int values[] = {5, 3, 9, 1, 7};
    qsort(values, sizeof values / sizeof values[0], sizeof values[0], by_value);
    return 0;
}
