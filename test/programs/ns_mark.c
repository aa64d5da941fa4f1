/*
 * `ns_mark I`: keeps 50 blocks of I * 1000 bytes, so that the trace of each of several runs
 * can be told apart by its sizes, and prints its pid (1 in a new pid namespace).
 */
#include <unistd.h>

#include "probe.h"

int main(int argc, char **argv)
{
    int i = argc > 1 ? atoi(argv[1]) : 1;
    for (int k = 0; k < 50; k++)
        keep(malloc((size_t)i * 1000));
    printf("mark %d pid %d\n", i, (int)getpid());
    return 0;
}
