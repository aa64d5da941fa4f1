#!/bin/sh
# Every signal a user can send to `churn run` reaches the program (test/programs/
# churn_signals.c), as if it had been sent to the program itself: each catchable signal, 1 to
# 31 and real-time ones, sent to churn with kill is taken by the program's handler, and
# sigqueue's value comes with it; a signal whose default action ends the program (ALRM,
# PROF, VTALRM, PWR, STKFLT, IO, XCPU) ends it, churn reports it and dies of the same signal,
# and no program is left running (also under `timeout --foreground -s ALRM/PROF`, which
# signals churn alone); TSTP sent to churn stops the program and churn with it, CONT
# continues both, while a SIGSTOP and SIGCONT sent to the program's own pid (a debugger,
# cpulimit) leave churn waiting, not stopped; a signal the program's child sends to the whole
# group reaches the program once (churn does not pass its copy on); churn's stderr a closed
# pipe leaves the program's status churn's; the program starts with the dispositions and mask
# churn was started with (signals a shell or nohup ignored stay ignored, blocked ones
# blocked).
. test/lib.sh

CHURN=$ROOT/build/churn
[ -x "$CHURN" ] || fail "build/churn is missing: run make"
build_c churn_signals test/programs/churn_signals.c

check "$CHURN" "$WORK/churn_signals" "$WORK" <<'PY'
import ctypes, os, select, signal, subprocess, sys, time
from churncheck import expect, fail
churn, prog, work = sys.argv[1:4]
libc = ctypes.CDLL(None, use_errno=True)


class Run:
    """churn run PROG MODE, its stdin a pipe, the program's stdout read line by line."""

    def __init__(self, mode, name, group=False):
        # group: churn leads a session of its own, which the program's signals to its process
        # group do not leave
        self.p = subprocess.Popen([churn, "run", "-o", "%s/%s.zst" % (work, name), prog, mode],
                                  stdin=subprocess.PIPE, stdout=subprocess.PIPE,
                                  stderr=subprocess.PIPE, bufsize=0, start_new_session=group)
        self.buf = b""
        ready = self.line("the program's first line")
        if not ready.startswith("ready "):
            fail("the program started with %r" % ready)
        self.pid = int(ready.split()[1])
        self.start = starttime(self.pid)

    def line(self, what, seconds=30):
        deadline = time.time() + seconds
        while b"\n" not in self.buf:
            left = deadline - time.time()
            if left <= 0 or not select.select([self.p.stdout], [], [], left)[0]:
                self.kill()
                fail("no line from the program in %d s: %s" % (seconds, what))
            chunk = os.read(self.p.stdout.fileno(), 4096)
            if not chunk:
                self.kill()
                fail("the program's output ended (churn status %r) before %s: %s" %
                     (self.p.poll(), what, self.p.stderr.read().decode(errors="replace")))
            self.buf += chunk
        line, self.buf = self.buf.split(b"\n", 1)
        return line.decode()

    def kill(self):
        for pid in (self.pid if hasattr(self, "pid") else None, self.p.pid):
            try:
                if pid:
                    os.kill(pid, signal.SIGKILL)
            except ProcessLookupError:
                pass

    def end(self):
        """stdin closed; churn's status and stderr."""
        self.p.stdin.close()
        try:
            err = self.p.stderr.read().decode(errors="replace")
            self.p.wait(timeout=60)
        except subprocess.TimeoutExpired:
            self.kill()
            fail("churn did not end within 60 s of the program's input ending")
        return self.p.returncode, err


def starttime(pid):
    """The process's start time (/proc/PID/stat field 22), None when it is gone."""
    try:
        stat = open("/proc/%d/stat" % pid).read()
    except OSError:
        return None
    fields = stat[stat.rindex(")") + 2:].split()
    return int(fields[19]), fields[0]


def left_running(pid, start):
    now = starttime(pid)
    return now is not None and now[0] == start[0] and now[1] != "Z"


def state(pid):
    s = starttime(pid)
    return s[1] if s else None


def wait_for(what, cond, seconds=30):
    deadline = time.time() + seconds
    while not cond():
        if time.time() > deadline:
            fail("%s: not within %d s" % (what, seconds))
        time.sleep(0.02)


# ---- each catchable signal sent to churn is taken by the program's handler ----
# ALRM and PROF first: `timeout -s ALRM` and `-s PROF` are how a user meets them.
order = [signal.SIGALRM, signal.SIGPROF]
order += [s for s in range(1, 32)
          if s not in (signal.SIGKILL, signal.SIGSTOP) and s not in order]
rt = [signal.SIGRTMIN, signal.SIGRTMIN + 5, signal.SIGRTMAX]
r = Run("catch", "catch")
for sig in order + rt:
    os.kill(r.p.pid, sig)
    got = r.line("signal %d sent to churn" % sig)
    expect("the program's handler after signal %d was sent to churn" % sig, got,
           "got %d -" % sig)
# sigqueue's value is the program's too
for sig, value in ((signal.SIGRTMIN + 1, 4242), (signal.SIGUSR1, 77)):
    if libc.sigqueue(r.p.pid, sig, ctypes.c_void_p(value)):
        fail("sigqueue: %s" % os.strerror(ctypes.get_errno()))
    expect("the program's handler after sigqueue(%d, %d) to churn" % (sig, value),
           r.line("sigqueue %d" % sig), "got %d %d" % (sig, value))
status, err = r.end()
expect("churn's status after the program exited 3", status, 3)
print("catch: %d signals sent to churn, each taken by the program; sigqueue's values kept"
      % (len(order) + len(rt) + 2))

# ---- a signal that ends the program by default: churn reports it and dies of it ----
for sig in (signal.SIGALRM, signal.SIGPROF, signal.SIGVTALRM, signal.SIGPWR,
            signal.SIGSTKFLT, signal.SIGIO, signal.SIGXCPU):
    r = Run("wait", "wait%d" % sig)
    os.kill(r.p.pid, sig)
    try:
        r.p.wait(timeout=60)
    except subprocess.TimeoutExpired:
        r.kill()
        fail("churn did not end within 60 s of signal %d" % sig)
    # churn's stderr is read once nothing can hold it open: a program left running would
    if left_running(r.pid, r.start):
        os.kill(r.pid, signal.SIGKILL)
        fail("signal %d sent to churn ended churn and left the program running" % sig)
    err = r.p.stderr.read().decode(errors="replace")
    r.p.stdin.close()
    expect("churn's status after signal %d" % sig, r.p.returncode, -sig)
    if "killed by signal %d" % sig not in err:
        fail("churn did not report the program's death by signal %d: %r" % (sig, err))
print("default actions: the program died of each signal sent to churn, churn of the same")


def programs():
    """Processes running PROG, but zombies."""
    found = []
    for d in os.listdir("/proc"):
        if d.isdigit():
            try:
                if os.readlink("/proc/%s/exe" % d) == prog and state(int(d)) != "Z":
                    found.append(int(d))
            except OSError:
                pass
    return found


# timeout --foreground signals churn alone (without it, timeout signals the whole group)
for name in ("ALRM", "PROF"):
    before = programs()
    # its stdin held open: the program waits until it is signalled
    t = subprocess.Popen(["timeout", "--foreground", "-s", name, "2", churn, "run", "-o",
                          "%s/timeout%s.zst" % (work, name), prog, "wait"],
                         stdin=subprocess.PIPE, stdout=subprocess.DEVNULL,
                         stderr=subprocess.DEVNULL)
    t.wait(timeout=120)
    left = [p for p in programs() if p not in before]
    for p in left:
        os.kill(p, signal.SIGKILL)
    t.stdin.close()
    if left:
        fail("timeout --foreground -s %s churn run: the program was left running (pid %s)"
             % (name, left))
    expect("timeout --foreground -s %s churn run: status" % name, t.returncode, 124)
print("timeout --foreground -s ALRM/PROF: no program left running")

# ---- TSTP sent to churn stops the program and churn; CONT continues both ----
r = Run("wait", "stop")
os.kill(r.p.pid, signal.SIGTSTP)
wait_for("the program stopped after TSTP sent to churn", lambda: state(r.pid) == "T")
wait_for("churn stopped with the program", lambda: state(r.p.pid) == "T")
os.kill(r.p.pid, signal.SIGCONT)
wait_for("the program continued after CONT sent to churn", lambda: state(r.pid) not in ("T", None))
wait_for("churn continued", lambda: state(r.p.pid) not in ("T", None))
status, err = r.end()
expect("churn's status after a stop and a continue", status, 3)
print("stop: TSTP to churn stopped the program and churn, CONT continued both")

# ---- SIGSTOP and SIGCONT sent to the program's own pid (a debugger, cpulimit) leave churn
# running: what continues the program would not continue churn ----
r = Run("wait", "pstop")
for i in range(20):
    os.kill(r.pid, signal.SIGSTOP)
    wait_for("the program stopped by SIGSTOP", lambda: state(r.pid) == "T")
    os.kill(r.pid, signal.SIGCONT)
    wait_for("the program continued", lambda: state(r.pid) not in ("T", None))
if state(r.p.pid) == "T":
    r.p.send_signal(signal.SIGCONT)
    fail("churn stopped with its program when SIGSTOP was sent to the program's pid")
status, err = r.end()
expect("churn's status after 20 STOP and CONT sent to the program", status, 3)
print("SIGSTOP and SIGCONT to the program, 20 times: churn went on waiting for it")

# ---- a signal the program's child sends to the whole process group reaches churn too: churn
# does not pass it on, the program takes it once (the sender stays a zombie, which churn can
# read: docs/reliability.md) ----
r = Run("group", "group", group=True)
expect("the program after its child's kill(0)", r.line("sent"), "sent")
# a later real-time signal sent to churn is passed on after any copy of the first: the count
# it prints is final
os.kill(r.p.pid, signal.SIGRTMIN + 3)
expect("the program's count of the signal its child sent to the group",
       r.line("count after the fence"), "count 1")
status, err = r.end()
expect("churn's status after the group signal", status, 3)
print("group: a signal the program's child sent to the group taken once")

# ---- churn's own stderr a closed pipe: churn's lines are lost, never the program's status ----
p = subprocess.Popen([churn, "run", "-o", work + "/pipe.zst", prog, "wait"],
                     stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL,
                     stderr=subprocess.PIPE)
p.stderr.close()
p.wait(timeout=60)
expect("churn's status with its stderr a closed pipe", p.returncode, 3)
print("closed stderr: churn exits with the program's status")

# ---- the dispositions and the mask the program starts with are churn's own ----
ignored = (signal.SIGHUP, signal.SIGINT, signal.SIGQUIT, signal.SIGUSR2, signal.SIGPIPE)
blocked = {signal.SIGUSR1, signal.SIGWINCH, signal.SIGTERM}


def setup():
    for s in ignored:
        signal.signal(s, signal.SIG_IGN)
    signal.pthread_sigmask(signal.SIG_SETMASK, blocked)


native = subprocess.run([prog, "dispositions"], capture_output=True, text=True,
                        preexec_fn=setup)
traced = subprocess.run([churn, "run", "-o", work + "/disp.zst", prog, "dispositions"],
                        capture_output=True, text=True, preexec_fn=setup)
expect("churn run's status", traced.returncode, 0)
want = "ignored %s\nblocked %s\n" % (" ".join(str(int(s)) for s in sorted(ignored)),
                                     " ".join(str(int(s)) for s in sorted(blocked)))
expect("the dispositions and mask natively", native.stdout, want)
expect("the dispositions and mask under churn run", traced.stdout, want)
print("dispositions: ignored %s and blocked %s kept" % (sorted(map(int, ignored)),
                                                        sorted(map(int, blocked))))
PY
