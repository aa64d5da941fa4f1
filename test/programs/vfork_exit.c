/*
 * vfork, then _exit(7) in the child (which shares the parent's memory until it is gone), then
 * more work in the parent: the parent's trace must keep every event after the vfork and end
 * with the parent's own exit (status 0), not the child's _exit 7.
 */
#include <sys/wait.h>
#include <unistd.h>

#include "probe.h"

#define BEFORE 5
#define AFTER 9
#define SIZE 400

int main(void)
{
    static void *kept[BEFORE + AFTER];
    phase("before");
    for (unsigned i = 0; i < BEFORE; i++)
        kept[i] = malloc(SIZE);
    pid_t child = vfork();
    if (child == 0)
        _exit(7);
    if (child < 0)
        die("vfork failed");
    int st;
    if (waitpid(child, &st, 0) != child || !WIFEXITED(st) || WEXITSTATUS(st) != 7)
        die("the vfork child did not end with _exit(7)");
    phase("after");
    for (unsigned i = BEFORE; i < BEFORE + AFTER; i++)
        kept[i] = malloc(SIZE);
    phase("end");
    for (unsigned i = 0; i < BEFORE + AFTER; i++)
        keep(kept[i]);
    phases_print();
    return 0;
}
