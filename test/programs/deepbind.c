/* dlopen(LIB, RTLD_DEEPBIND | (now|lazy)), then the library allocates and frees in a loop
   and keeps KEEP blocks of 100 bytes: exactly KEEP of its objects are live at exit.
   Usage: deepbind LIB now|lazy ROUNDS KEEP */
#include <dlfcn.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

int main(int argc, char **argv)
{
    if (argc != 5)
        return 2;
    int mode = RTLD_DEEPBIND | (strcmp(argv[2], "lazy") ? RTLD_NOW : RTLD_LAZY);
    errno = 0;
    void *h = dlopen(argv[1], mode);
    if (!h) {
        fprintf(stderr, "dlopen %s: %s\n", argv[1], dlerror());
        return 1;
    }
    if (dlerror() != NULL) {
        fprintf(stderr, "dlerror after a successful dlopen is not NULL\n");
        return 1;
    }
    void (*churn)(int, int) = (void (*)(int, int))dlsym(h, "deep_churn");
    if (!churn)
        return 1;
    churn(atoi(argv[3]), atoi(argv[4]));
    printf("done\n");
    return 0;
}
