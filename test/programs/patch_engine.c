/*
 * The patching engine (shim/ways/patch.c) on functions with known prologues, written in assembly
 * so their first bytes are exactly what each case is about, plus compiled C functions.
 * Built with the engine and libchurn's arena (test/t_patch.sh).  For every case: the result
 * before patching, the patch's verdict, the result through the replacement or hook, the
 * original through its trampoline, and that a refusal left the bytes untouched.  Prints one
 * line per case; exits 1 on the first wrong result.
 */
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "ways/patch.h"
#include "shim.h"

churn_options churn_opt;

/* The engine must never allocate from the heap it would be tracing: count every call. */
extern void *__libc_malloc(size_t), *__libc_calloc(size_t, size_t),
    *__libc_realloc(void *, size_t);
static int heap_calls;
void *malloc(size_t n) { heap_calls++; return __libc_malloc(n); }
void *calloc(size_t n, size_t s) { heap_calls++; return __libc_calloc(n, s); }
void *realloc(void *p, size_t n) { heap_calls++; return __libc_realloc(p, n); }

long value = 40;
int hook_calls;
long hook_rsp_mod;

__asm__(
    ".text\n"
    ".p2align 4, 0xcc\n"
    "f_frame: push %rbp; mov %rsp, %rbp; lea 1(%rdi), %rax; pop %rbp; ret\n"
    ".p2align 4, 0xcc\n"
    "f_subrsp: sub $0x18, %rsp; mov %rdi, 8(%rsp); mov 8(%rsp), %rax; add $2, %rax;"
    " add $0x18, %rsp; ret\n"
    ".p2align 4, 0xcc\n"
    "f_riprel: mov value(%rip), %rax; add %rdi, %rax; ret\n"
    ".p2align 4, 0xcc\n"
    "f_lea: lea value(%rip), %rax; mov (%rax), %rax; sub %rdi, %rax; ret\n"
    ".p2align 4, 0xcc\n"
    "f_short6: mov $6, %eax; ret\n"
    ".p2align 4, 0xcc\n"
    "f_endbr: endbr64; push %rbp; mov %rsp, %rbp; lea 3(%rdi), %rax; pop %rbp; ret\n"
    ".p2align 4, 0xcc\n"
    "f_jmp: .byte 0xe9; .long f_frame - . - 4\n"
    ".p2align 4, 0xcc\n"
    "helper5: mov $5, %eax; ret\n"
    ".p2align 4, 0xcc\n"
    "f_call: .byte 0xe8; .long helper5 - . - 4; add %rdi, %rax; ret\n"
    ".p2align 4, 0xcc\n"
    "f_jcc8: test %rdi, %rdi; je 1f; lea 10(%rdi), %rax; ret\n"
    "1: mov $-1, %rax; ret\n"
    ".p2align 4, 0xcc\n"
    "f_tiny_pad: xor %eax, %eax; ret\n"
    ".p2align 4, 0xcc\n"
    "f_tiny: xor %eax, %eax; ret\n"
    "f_after_tiny: mov $7, %eax; ret\n"
    ".p2align 4, 0xcc\n"
    "f_loopback: xor %eax, %eax; 1: add %rdi, %rax; dec %rsi; jnz 1b; ret\n"
    ".p2align 4, 0xcc\n"
    "f_selfloop: 1: dec %edi; jnz 1b; mov %edi, %eax; ret\n"
    ".p2align 4, 0xcc\n"
    "f_jrcxz: mov %rdi, %rcx; jrcxz 1f; mov $1, %eax; ret\n"
    "1: xor %eax, %eax; ret\n"
    /* Empty functions, as ld.so's _dl_debug_state: a lone ret with nop padding (the long nops
       gas pads with), after an endbr64 or not; and one whose padding is not nops. */
    ".p2align 4, 0xcc\n"
    "e_ret: ret\n"
    ".p2align 4, 0x90\n"
    "e_endbr: endbr64; ret\n"
    ".p2align 4, 0x90\n"
    "e_notnop: ret; .byte 0xcc, 0xcc, 0xcc, 0xcc, 0xcc\n"
    ".p2align 4, 0xcc\n"
    /* Clobbers every register a hook may clobber, and notes the stack's alignment. */
    "clobber_hook: mov %rsp, %rax; and $15, %rax; mov %rax, hook_rsp_mod(%rip);"
    " incl hook_calls(%rip); mov $-1, %rax; mov %rax, %rdi; mov %rax, %rsi; mov %rax, %rdx;"
    " mov %rax, %rcx; mov %rax, %r8; mov %rax, %r9; mov %rax, %r10; mov %rax, %r11;"
    " pcmpeqd %xmm0, %xmm0; pcmpeqd %xmm1, %xmm1; pcmpeqd %xmm2, %xmm2;"
    " pcmpeqd %xmm3, %xmm3; pcmpeqd %xmm4, %xmm4; pcmpeqd %xmm5, %xmm5;"
    " pcmpeqd %xmm6, %xmm6; pcmpeqd %xmm7, %xmm7; ret\n");

typedef long (*fn2)(long, long);
long f_frame(long, long), f_subrsp(long, long), f_riprel(long, long), f_lea(long, long),
    f_short6(long, long), f_endbr(long, long), f_jmp(long, long), f_call(long, long),
    f_jcc8(long, long), f_tiny_pad(long, long), f_tiny(long, long), f_after_tiny(long, long),
    f_loopback(long, long), f_selfloop(long, long), f_jrcxz(long, long);
void clobber_hook(void);

__attribute__((noinline)) long c_mix(long a, long b)
{
    static volatile long calls;
    calls++;
    return a * 3 + b + calls * 0;
}

static int failures;

static void bad(const char *name, const char *what, long got, long want)
{
    printf("FAIL %s: %s: got %ld, expected %ld\n", name, what, got, want);
    failures++;
}

/* One replacement per case, each calling its own original: the result + 1000. */
#define REPLACEMENT(f)                                                                    \
    static fn2 orig_##f;                                                                  \
    static long repl_##f(long a, long b) { return orig_##f(a, b) + 1000; }
#define ALL(X) X(f_frame) X(f_subrsp) X(f_riprel) X(f_lea) X(f_short6) X(f_endbr) X(f_jmp)     \
    X(f_call) X(f_jcc8) X(f_tiny_pad) X(f_tiny) X(f_loopback) X(f_selfloop) X(f_jrcxz) X(c_mix)
ALL(REPLACEMENT)

/* Redirects f, which must then answer args (a, b) and (a2, b2) through the replacement, or
   refuse when want_refusal and stay byte-for-byte what it was. */
static void redirect_case(const char *name, fn2 f, long (*repl)(long, long), fn2 *orig,
                          long a, long b, long a2, long b2, int want_refusal)
{
    fn2 volatile call = f;
    long before = call(a, b), before2 = call(a2, b2);
    unsigned char bytes[24];
    memcpy(bytes, (void *)f, sizeof bytes);
    const char *why = "";
    int heap_before = heap_calls;
    int rc = churn_patch_redirect((void *)f, (void *)repl, (void **)orig, &why);
    if (heap_calls != heap_before)
        bad(name, "calls of the traced heap while patching", heap_calls - heap_before, 0);
    if (want_refusal) {
        if (rc == 0) {
            bad(name, "patched although it must be refused", rc, -1);
            return;
        }
        if (memcmp(bytes, (void *)f, sizeof bytes))
            bad(name, "a refusal changed the function's bytes", 1, 0);
        if (call(a, b) != before)
            bad(name, "result after a refusal", call(a, b), before);
        printf("refused %s: %s\n", name, why);
        return;
    }
    if (rc) {
        printf("FAIL %s: refused: %s\n", name, why);
        failures++;
        return;
    }
    if (call(a, b) != before + 1000)
        bad(name, "result through the replacement", call(a, b), before + 1000);
    if (call(a2, b2) != before2 + 1000)
        bad(name, "second result through the replacement", call(a2, b2), before2 + 1000);
    if ((*orig)(a, b) != before)
        bad(name, "result of the original through its trampoline", (*orig)(a, b), before);
    printf("patched %s\n", name);
}

#define REDIRECT(f, a, b, a2, b2, refuse) \
    redirect_case(#f, f, repl_##f, &orig_##f, a, b, a2, b2, refuse)

__attribute__((noinline)) long args_fn(long a, long b, long c, long d, long e, long f,
                                       double x0, double x1, double x2, double x3, double x4,
                                       double x5, double x6, double x7)
{
    return a + 2 * b + 3 * c + 4 * d + 5 * e + 6 * f +
           (long)(x0 + 2 * x1 + 3 * x2 + 4 * x3 + 5 * x4 + 6 * x5 + 7 * x6 + 8 * x7);
}

__attribute__((noinline)) double vsum(int n, ...)
{
    va_list ap;
    va_start(ap, n);
    double s = 0;
    for (int i = 0; i < n; i++)
        s += va_arg(ap, double);
    va_end(ap);
    return s;
}

static void hook_cases(void)
{
    const char *why = "";
    long (*volatile args)(long, long, long, long, long, long, double, double, double, double,
                          double, double, double, double) = args_fn;
    double (*volatile vs)(int, ...) = vsum;
    long want = args(1, 2, 3, 4, 5, 6, 1, 2, 3, 4, 5, 6, 7, 8);
    double vwant = vs(3, 1.5, 2.5, 4.0);
    int heap_before = heap_calls;
    if (churn_patch_entry_hook((void *)args_fn, clobber_hook, &why) ||
        churn_patch_entry_hook((void *)vsum, clobber_hook, &why)) {
        printf("FAIL hook: refused: %s\n", why);
        failures++;
        return;
    }
    if (heap_calls != heap_before)
        bad("hook", "calls of the traced heap while patching", heap_calls - heap_before, 0);
    long got = args(1, 2, 3, 4, 5, 6, 1, 2, 3, 4, 5, 6, 7, 8);
    if (got != want)
        bad("hook args_fn", "result with every argument register", got, want);
    if (hook_calls != 1)
        bad("hook args_fn", "hook calls", hook_calls, 1);
    if (hook_rsp_mod != 8)
        bad("hook args_fn", "rsp mod 16 inside the hook (8 = aligned at the call)",
            hook_rsp_mod, 8);
    double vgot = vs(3, 1.5, 2.5, 4.0);
    if (vgot != vwant)
        bad("hook vsum", "varargs sum (al and xmm0-2 kept)", (long)(vgot * 10), (long)(vwant * 10));
    if (hook_calls != 2)
        bad("hook vsum", "hook calls", hook_calls, 2);
    if (!churn_patch_entry_hook((void *)f_frame, clobber_hook, &why))
        bad("hook f_frame", "a second patch of one function was accepted", 0, -1);
    else
        printf("refused second patch of f_frame: %s\n", why);
    printf("hooked args_fn vsum: %d hook calls, rsp %% 16 = %ld in the hook\n", hook_calls,
           hook_rsp_mod);
}

void e_ret(void), e_endbr(void), e_notnop(void);
static int empty_calls;
static void count_empty(void) { empty_calls++; }

/* churn_patch_empty: the empty function calls the replacement, which returns to the caller. */
static void empty_cases(void)
{
    const char *why = NULL;
    void (*const ok[])(void) = {e_ret, e_endbr};
    for (int i = 0; i < 2; i++) {
        if (churn_patch_empty((void *)ok[i], count_empty, &why)) {
            printf("FAIL empty %d: refused: %s\n", i, why);
            failures++;
            return;
        }
        ok[i]();
        ok[i]();
    }
    if (empty_calls != 4)
        bad("empty", "calls through the patched empty functions", empty_calls, 4);
    unsigned char before[16];
    memcpy(before, (void *)e_notnop, sizeof before);
    if (!churn_patch_empty((void *)e_notnop, count_empty, &why))
        bad("e_notnop", "patched although its padding is not nops", 0, -1);
    else if (memcmp(before, (void *)e_notnop, sizeof before))
        bad("e_notnop", "bytes changed by a refusal", 1, 0);
    else
        printf("refused e_notnop: %s\n", why);
    printf("empty e_ret e_endbr: %d calls through the replacement\n", empty_calls);
}

int main(void)
{
    REDIRECT(f_frame, 5, 0, -3, 0, 0);
    REDIRECT(f_subrsp, 5, 0, 100, 0, 0);
    REDIRECT(f_riprel, 2, 0, -40, 0, 0);
    REDIRECT(f_lea, 2, 0, 50, 0, 0);
    REDIRECT(f_short6, 0, 0, 1, 0, 0);
    REDIRECT(f_endbr, 7, 0, 8, 0, 0);
    REDIRECT(f_jmp, 9, 0, 10, 0, 0);
    REDIRECT(f_call, 1, 0, 2, 0, 0);
    REDIRECT(f_jcc8, 0, 0, 4, 0, 0);
    REDIRECT(f_tiny_pad, 0, 0, 1, 0, 0);
    REDIRECT(c_mix, 3, 4, 5, 6, 0);
    REDIRECT(f_tiny, 0, 0, 1, 0, 1);
    REDIRECT(f_loopback, 3, 4, 2, 2, 1);
    REDIRECT(f_selfloop, 3, 0, 5, 0, 1);
    REDIRECT(f_jrcxz, 0, 0, 1, 0, 1);
    if (f_after_tiny(0, 0) != 7)
        bad("f_after_tiny", "the function after a refused short one", f_after_tiny(0, 0), 7);
    hook_cases();
    empty_cases();
    return failures ? 1 : 0;
}
