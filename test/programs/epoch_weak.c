/* Epochs from a program that does not include churn.h: it declares churn_epoch_begin weak
   by hand, as a program in another language's runtime or a plugin would, and calls it when
   the tracer is there.  Epoch i (1..N) allocates i blocks of 100 bytes and keeps them; it
   prints each epoch number churn_epoch_begin returned.  One more epoch holds the exit. */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>

uint64_t churn_epoch_begin(void) __attribute__((weak));

int main(int argc, char **argv)
{
    int n = argc > 1 ? atoi(argv[1]) : 10;
    if (!churn_epoch_begin) {
        fprintf(stderr, "churn_epoch_begin: no such symbol in the process\n");
        return 3;
    }
    puts("start"); /* stdout's buffer, allocated in epoch 0 */
    for (int i = 1; i <= n; i++) {
        printf("epoch %llu\n", (unsigned long long)churn_epoch_begin());
        for (int k = 0; k < i; k++) {
            volatile char *p = malloc(100);
            if (!p)
                return 1;
            p[0] = 1;
        }
    }
    churn_epoch_begin();
    return 0;
}
