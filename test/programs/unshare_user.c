/*
 * unshare(CLONE_NEWUSER), which the kernel allows only in a single-threaded process (what
 * `unshare -r`, bwrap and sandboxes do at start), after allocating; then allocating on in the
 * new namespace.  Exit 1 with one line when the call fails.
 */
#define _GNU_SOURCE
#include <errno.h>
#include <sched.h>

#include "probe.h"

#define BLOCKS 50

int main(void)
{
    for (int i = 0; i < BLOCKS; i++)
        keep(malloc(64));
    if (unshare(CLONE_NEWUSER))
        die("unshare(CLONE_NEWUSER): %s", strerror(errno));
    for (int i = 0; i < BLOCKS; i++)
        keep(malloc(128));
    printf("unshared a user namespace\n");
    return 0;
}
