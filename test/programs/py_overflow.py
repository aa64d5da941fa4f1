"""Twenty stack overflows inside PyObject_Malloc and PyObject_Free, each caught and jumped out
of and followed by 100,000 mallocs and frees of 1,000 bytes before Python runs again
(py_overflow.c, whose shared library is the first argument).  Prints the levels whose block
was allocated and the mallocs made after the overflows."""
import ctypes
import sys

lib = ctypes.PyDLL(sys.argv[1])
lib.overflows.restype = ctypes.c_long
lib.after.restype = ctypes.c_long
levels = lib.overflows(20)
print("levels %d after %d" % (levels, lib.after()))
