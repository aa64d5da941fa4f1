"""Asks, TIMES times each, for a bytes object of 100,000 bytes through PyObject_Malloc
(b"x" * n) and through PyObject_Calloc (bytes(n)), each a request of 100,033 bytes that
pymalloc hands to malloc and calloc; prints how many raised MemoryError and how many
succeeded.  Under test/programs/malloc_refuses.c with MALLOC_REFUSES=100033 every one
fails."""
import sys

times = int(sys.argv[1])
failed = made = 0
for i in range(times):
    for make in (lambda: b"x" * 100000, lambda: bytes(100000)):
        try:
            make()
            made += 1
        except MemoryError:
            failed += 1
print(failed, made)
