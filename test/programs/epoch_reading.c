/*
 * An epoch's CPU time and RSS come from a reading at most 1 ms older than its end
 * (shim/record/epoch.c).  Phases: "touch" makes 64 MiB resident, which takes well over 1 ms, so its
 * epoch must show them; "burst" ends 2000 epochs back to back, which share readings; "spin"
 * burns 20 ms of CPU, which its epoch must show; the CPU time of the epochs from "before"
 * to "spin" adds up to the process's own count over them; the last epoch, ended at exit half
 * a millisecond of CPU after "end" began, shows that CPU.
 */
#include <sys/resource.h>
#include <time.h>

#include "probe.h"

#define TOUCH (64u << 20)
#define BURST 2000

static uint64_t cpu_ns(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_PROCESS_CPUTIME_ID, &ts);
    return (uint64_t)ts.tv_sec * 1000000000u + (uint64_t)ts.tv_nsec;
}

int main(void)
{
    uint64_t first = cpu_ns();
    phase("before");
    phase("touch");
    char *big = malloc(TOUCH);
    if (!big)
        die("malloc failed");
    memset(big, 1, TOUCH);
    keep(big);
    phase("burst");
    for (unsigned i = 0; i < BURST; i++)
        churn_epoch_begin();
    phase("spin");
    uint64_t start = cpu_ns();
    volatile uint64_t x = 0;
    while (cpu_ns() - start < 20000000u)
        x++;
    uint64_t spun = cpu_ns();
    phase("end");
    /* Half a millisecond of CPU before exit: the trace's last epoch reads anew at the end. */
    start = cpu_ns();
    while (cpu_ns() - start < 500000u)
        x++;
    free(big);
    phases_print();
    printf("cpu %llu %llu\n", (unsigned long long)first, (unsigned long long)spun);
    return 0;
}
