/* A preallocated pool (memcached -L): one 64 MiB allocation of which one page is written,
   then epochs that allocate almost nothing (test/t_untouched.sh). */
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include "churn.h"

int main(void)
{
    char *pool = malloc(64 << 20);
    if (!pool)
        return 1;
    memset(pool, 1, 4096);
    for (int e = 0; e < 4; e++) {
        churn_epoch_begin();
        free(malloc(32));
        usleep(20000);
    }
    free(pool);
    return 0;
}
