/*
 * fork + exec under the shim: `spawn` keeps BLOCKS blocks across a system() call (a shell
 * that runs another program, both inheriting LD_PRELOAD and CHURN_OUT) and frees them after
 * it.  The programs it starts must not write into the parent's trace file.  Prints its pid.
 */
#include <unistd.h>

#include "probe.h"

#define BLOCKS 10
#define SIZE 777

static __attribute__((noinline)) void *spawn_block(unsigned i)
{
    void *p = malloc(SIZE);
    if (!p)
        die("malloc failed");
    fill(p, SIZE, i);
    return p;
}

int main(void)
{
    void *blocks[BLOCKS];
    phase("before");
    for (unsigned i = 0; i < BLOCKS; i++)
        blocks[i] = spawn_block(i);
    phase("spawn");
    int status = system("ls / >/dev/null && true");
    if (status != 0)
        die("system() returned %d", status);
    phase("after");
    for (unsigned i = 0; i < BLOCKS; i++) {
        if (!filled(blocks[i], SIZE, i))
            die("block %u was overwritten", i);
        free(blocks[i]);
    }
    phase("end");
    phases_print();
    printf("pid %d\n", (int)getpid());
    return 0;
}
