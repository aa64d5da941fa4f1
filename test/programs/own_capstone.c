/* A program that decodes x86 code with capstone itself (libcapstone.so.4, linked dynamically):
   argv[1] rounds of cs_disasm, whose instruction arrays capstone takes from malloc and gives
   back to free.  Prints the instructions decoded. */
#include <capstone/capstone.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>

int main(int argc, char **argv)
{
    int rounds = argc > 1 ? atoi(argv[1]) : 1000;
    static const uint8_t code[] = {0x55, 0x48, 0x89, 0xe5, 0x48, 0x83, 0xec, 0x10, 0xc9, 0xc3};
    csh h;
    if (cs_open(CS_ARCH_X86, CS_MODE_64, &h) != CS_ERR_OK) {
        fprintf(stderr, "cs_open failed\n");
        return 1;
    }
    size_t decoded = 0;
    for (int i = 0; i < rounds; i++) {
        cs_insn *insn;
        size_t n = cs_disasm(h, code, sizeof code, 0x1000, 0, &insn);
        if (!n) {
            fprintf(stderr, "cs_disasm decoded nothing\n");
            return 1;
        }
        decoded += n;
        cs_free(insn, n);
    }
    cs_close(&h);
    printf("%zu instructions\n", decoded);
    return 0;
}
