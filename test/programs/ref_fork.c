/* fork (test/t_referee.sh): the parent keeps 10 blocks and forks; the child frees 4 of the
   inherited blocks, allocates and frees 100 more, keeps 3 and leaves with exit(); a second
   child allocates 5 and leaves with _exit(); the parent frees 2 after both are done.  Live at
   exit: parent 8 of its own, first child 6 inherited + 3, second child 10 + 5. */
#include <stdlib.h>
#include <sys/wait.h>
#include <unistd.h>

static inline void escape(void *p) { __asm__ volatile("" : : "g"(p) : "memory"); }

void *kept[16];

int main(void)
{
    for (int i = 0; i < 10; i++)
        kept[i] = malloc(64 + (size_t)i);
    pid_t a = fork();
    if (a < 0)
        return 1;
    if (a == 0) {
        for (int i = 0; i < 4; i++)
            free(kept[i]);
        for (int i = 0; i < 100; i++) {
            void *p = malloc(200);
            escape(p);
            free(p);
        }
        for (int i = 10; i < 13; i++)
            kept[i] = malloc(300);
        exit(0);
    }
    int status;
    if (waitpid(a, &status, 0) != a || status)
        return 1;
    pid_t b = fork();
    if (b < 0)
        return 1;
    if (b == 0) {
        for (int i = 10; i < 15; i++)
            kept[i] = malloc(400);
        _exit(0);
    }
    if (waitpid(b, &status, 0) != b || status)
        return 1;
    free(kept[0]);
    free(kept[1]);
    return 0;
}
