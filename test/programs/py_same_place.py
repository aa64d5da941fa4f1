"""Python frames where the last stack's frames were, with other callers or lines: each
allocation has a size of its own, and t_py_frames_same_place.sh checks the Python frames of
each size's stack against the lines marked here.

via_a and via_b run from one instruction of main, their frames (and leaf's) at the same
address on the same instruction of their code; via_a runs from two lines of main; the
generator chunks, a frame in the heap on the same instruction, is resumed by first and by
second, from one instruction of main.  Prints the bytes allocated."""
import sys


def leaf(n):
    return bytearray(n)  # @leaf


def via_a(n):
    return leaf(n)  # @via_a


def via_b(n):
    return leaf(n)  # @via_b


def chunks():
    n = yield
    while True:
        n = yield bytearray(n)  # @chunks


def first(g, n):
    return g.send(n)  # @first


def second(g, n):
    return g.send(n)  # @second


def main(rounds):
    g = chunks()
    next(g)
    total = 0
    for _ in range(rounds):
        for call, n in ((via_a, 10001), (via_b, 20001)):
            total += len(call(n))  # @alternate
        total += len(via_a(30001))  # @line_x
        total += len(via_a(40001))  # @line_y
        for call, n in ((first, 50001), (second, 60001)):
            total += len(call(g, n))  # @resume
    return total


if __name__ == "__main__":
    print(main(int(sys.argv[1])))  # @module
