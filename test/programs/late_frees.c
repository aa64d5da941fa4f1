/*
 * Linked against late_lib.so and late_cxx.so, whose frees come after libchurn's destructor
 * (late_lib.c, late_cxx.cc): every one of them must be in the trace, and nothing of theirs
 * is left live at exit.
 */
#include <stdio.h>

int late_lib_linked(void);
int late_cxx_linked(void);

int main(void)
{
    printf("%d %d\n", late_lib_linked(), late_cxx_linked());
    return 0;
}
