/* A sizeless exported symbol (hand-written assembly without .size, as some libraries'
   entry points) right before a static function that keeps 12 blocks of 40 bytes, for
   test/t_stripped_frames.sh: built with -fno-toplevel-reorder (the order of the source in
   the code) and --export-dynamic (sizeless_entry in .dynsym), then stripped, keep_hidden is
   in no symbol, and a frame there must not be named sizeless_entry. */
#include <stdio.h>
#include <stdlib.h>

__asm__(".globl sizeless_entry\n"
        ".type sizeless_entry, @function\n"
        "sizeless_entry:\n"
        "    ret\n");

void *hidden_kept[12];

__attribute__((noinline, noclone)) static void keep_hidden(void)
{
    for (int i = 0; i < 12; i++)
        if (!(hidden_kept[i] = malloc(40))) {
            perror("malloc");
            exit(1);
        }
}

int main(void)
{
    keep_hidden();
    printf("12 blocks kept\n");
    return 0;
}
