/*
 * Symbolization test program (C++, -O2): functions forced inline, two levels deep, into a
 * member function of a class in a namespace.  The innermost one sits in an anonymous
 * namespace, for which GCC emits no linkage name.  Addresses captured inside the inlined
 * code must resolve to the whole chain, each frame at its MARK:<label> line.
 */
#include "modmap.h"

namespace shop {

__attribute__((noinline)) void record(const char *label)
{
    modmap_print_ip(label, __builtin_return_address(0), 1);
    asm volatile("" ::: "memory"); /* keeps the call from becoming a tail call */
}

namespace {
__attribute__((always_inline)) inline long round_cents(long cents)
{
    record("anon"); /* MARK:anon-call */
    return (cents + 5) / 10 * 10;
}
} // namespace

__attribute__((always_inline)) inline long add_tax(long cents)
{
    record("inline"); /* MARK:inline-call */
    return round_cents(cents + cents / 5); /* MARK:anon-site */
}

class Cart {
public:
    explicit Cart(long total) : total_(total) {}
    __attribute__((noinline)) long checkout(long extra) const;

private:
    long total_;
};

long Cart::checkout(long extra) const
{
    long with_tax = add_tax(total_ + extra); /* MARK:inline-site */
    return with_tax * 3;
}

} // namespace shop

int main(int argc, char **)
{
    modmap_print();
    shop::Cart cart(argc * 100);
    printf("# total %ld\n", cart.checkout(argc));
    return 0;
}
