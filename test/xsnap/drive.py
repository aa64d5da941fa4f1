"""Drives one xsnap-worker through its netstring pipes (parent -> worker on fd 3, worker ->
parent on fd 4) the way Agoric's supervisor does: one `e<script>` delivery at a time, each
answered with `.{meters}\\1<result>` before the next is sent, then `q`.

Every delivery builds the same linked list of small objects (only XS slots: no strings, no
arrays, so the work lands in the slot heap, which XS grows with malloc).  In mode `grow` each
delivery appends its list to one that globalThis keeps; in mode `churn` the list is dropped at
the end of the delivery.  Prints a JSON summary: the worker's own meters after every delivery
(allocate = bytes XS took from the system for slots and chunks, currentHeapCount = slots in
use), its pid and how it ended.
"""
import argparse
import fcntl
import json
import os
import sys
import time

GROW = ("(function (n) { let h = globalThis.kept; "
        "for (let i = 0; i < n; i++) h = {next: h, a: i, b: i + 0.5}; "
        "globalThis.kept = h; })(%d)")
CHURN = ("(function (n) { let h = null; "
         "for (let i = 0; i < n; i++) h = {next: h, a: i, b: i + 0.5}; "
         "return h === null; })(%d)")


def high_pipe():
    """A pipe whose ends are above the descriptors the child is given (3 and 4), so that no
    dup2 of the spawn can overwrite an end another dup2 still needs."""
    ends = []
    for fd in os.pipe():
        ends.append(fcntl.fcntl(fd, fcntl.F_DUPFD_CLOEXEC, 10))
        os.close(fd)
    return ends


def write_netstring(fd, payload):
    data = b"%d:%s," % (len(payload), payload)
    while data:
        data = data[os.write(fd, data):]


def read_exact(stream, n):
    data = stream.read(n)
    if len(data) != n:
        raise EOFError("worker closed its pipe (%d of %d bytes)" % (len(data), n))
    return data


def read_netstring(stream):
    digits = b""
    while True:
        c = read_exact(stream, 1)
        if c == b":":
            break
        if not c.isdigit() or len(digits) > 9:
            raise ValueError("bad netstring length prefix %r" % (digits + c))
        digits += c
    body = read_exact(stream, int(digits))
    if read_exact(stream, 1) != b",":
        raise ValueError("netstring without its trailing comma")
    return body


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--worker", required=True)
    ap.add_argument("--mode", choices=("grow", "churn"), required=True)
    ap.add_argument("--deliveries", type=int, required=True)
    ap.add_argument("--objects", type=int, required=True, help="list nodes per delivery")
    ap.add_argument("--log", required=True, help="the worker's stdout and stderr")
    ap.add_argument("--env", action="append", default=[], help="NAME=VALUE for the worker")
    args = ap.parse_args()

    env = dict(os.environ)
    for item in args.env:
        name, _, value = item.partition("=")
        env[name] = value
    to_worker_r, to_worker_w = high_pipe()
    from_worker_r, from_worker_w = high_pipe()
    log = os.open(args.log, os.O_WRONLY | os.O_CREAT | os.O_TRUNC | os.O_CLOEXEC, 0o644)
    devnull = os.open(os.devnull, os.O_RDONLY | os.O_CLOEXEC)
    pid = os.posix_spawn(args.worker, [args.worker], env, file_actions=[
        (os.POSIX_SPAWN_DUP2, devnull, 0), (os.POSIX_SPAWN_DUP2, log, 1),
        (os.POSIX_SPAWN_DUP2, log, 2), (os.POSIX_SPAWN_DUP2, to_worker_r, 3),
        (os.POSIX_SPAWN_DUP2, from_worker_w, 4)])
    for fd in (to_worker_r, from_worker_w, log, devnull):
        os.close(fd)
    replies = os.fdopen(from_worker_r, "rb")

    script = ((GROW if args.mode == "grow" else CHURN) % args.objects).encode()
    deliveries = []
    error = None
    try:
        for n in range(1, args.deliveries + 1):
            start = time.monotonic_ns()
            write_netstring(to_worker_w, b"e" + script)
            reply = read_netstring(replies)
            elapsed = time.monotonic_ns() - start
            if not reply.startswith(b"."):
                raise RuntimeError("delivery %d failed: %r" % (n, reply[:200]))
            meters = json.loads(reply[1:].split(b"\x01", 1)[0])
            deliveries.append({"delivery": n, "allocate": meters["allocate"],
                               "current_heap_count": meters["currentHeapCount"],
                               "compute": meters["compute"], "round_trip_ns": elapsed})
        write_netstring(to_worker_w, b"q")
    except (OSError, EOFError, ValueError, RuntimeError) as e:
        error = str(e)
    os.close(to_worker_w)
    _, status = os.waitpid(pid, 0)
    if os.WIFEXITED(status):
        ended = "exit %d" % os.WEXITSTATUS(status)
    else:
        ended = "signal %d" % os.WTERMSIG(status)
    json.dump({"pid": pid, "mode": args.mode, "objects": args.objects,
               "deliveries": deliveries, "worker_exit": ended, "error": error}, sys.stdout)
    print()
    if error or ended != "exit 0":
        print("xsnap-worker: %s, %s (log %s)" % (error or "no protocol error", ended, args.log),
              file=sys.stderr)
        sys.exit(1)


if __name__ == "__main__":
    main()
