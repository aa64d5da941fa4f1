#!/usr/bin/env python3
"""Drives the seed's workerd case (config.capnp beside this file) and prints a JSON summary.

Starts `workerd serve` on a loopback socket that this script binds itself (handed over with
--socket-fd, so there is no free-port race), waits until it answers, sends sequential
GET /?n=N requests until the requested total of subrequests is served, then stops workerd with
SIGTERM (SIGKILL after --stop-timeout) and prints one JSON object on stdout.  With --collect
NAME,... it then makes V8 collect the named workers' isolates through workerd's inspector
(inspector.py) and serves --after-collect more requests of n=1 before it stops workerd.  Extra environment
for workerd (LD_PRELOAD, CHURN_OUT, ...) comes from --env NAME=VALUE; --config runs another
config instead (a copy of this one with V8 flags added: t_workerd_js.sh), in its directory,
where V8 writes its logs.  Exit status 0 only when
every request answered 200 with the expected count.
"""
import argparse
import http.client
import json
import os
import signal
import socket
import statistics
import subprocess
import sys
import tempfile
import time

import inspector

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(os.path.dirname(HERE))
MAX_PER_REQUEST = 10000          # main.js refuses larger n
MAX_TOTAL = 1000000              # keeps any run bounded in count
RSS_SAMPLES = 10                 # RSS is also read at this many evenly spaced points
LOG_TAIL = 12                    # lines of workerd's log kept when it ends badly


def die(message):
    print("drive.py: " + message, file=sys.stderr)
    sys.exit(2)


def parse_args():
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--workerd", help="workerd binary (default: test/workerd/install.sh's)")
    p.add_argument("--subrequests", type=int, default=20000, help="total subrequests (20000)")
    p.add_argument("--per-request", type=int, default=100, help="n of each GET /?n=n (100)")
    p.add_argument("--config", default=os.path.join(HERE, "config.capnp"),
                   help="workerd config (default: config.capnp beside this script)")
    p.add_argument("--env", action="append", default=[], metavar="NAME=VALUE",
                   help="extra environment for workerd; repeatable")
    p.add_argument("--request-timeout", type=float, default=60.0, help="seconds per request")
    p.add_argument("--startup-timeout", type=float, default=60.0, help="seconds to first answer")
    p.add_argument("--deadline", type=float, default=900.0,
                   help="seconds for the whole drive; requests stop when it passes")
    p.add_argument("--stop-timeout", type=float, default=15.0,
                   help="seconds between SIGTERM and SIGKILL")
    p.add_argument("--log", help="file for workerd's stdout and stderr (default: a temp file)")
    p.add_argument("--latencies", help="file to write one request latency (seconds) per line")
    p.add_argument("--collect", help="comma-separated workers whose isolates are collected "
                   "through the inspector after the requests")
    p.add_argument("--after-collect", type=int, default=1,
                   help="requests of n=1 served after the collection (1)")
    a = p.parse_args()
    if not 1 <= a.subrequests <= MAX_TOTAL:
        die("--subrequests must be in 1..%d" % MAX_TOTAL)
    if not 1 <= a.per_request <= MAX_PER_REQUEST:
        die("--per-request must be in 1..%d" % MAX_PER_REQUEST)
    for item in a.env:
        if "=" not in item or item.startswith("="):
            die("--env wants NAME=VALUE, got %r" % item)
    return a


def find_workerd():
    """The pinned binary, installed on demand; an install failure ends the run."""
    r = subprocess.run([os.path.join(HERE, "install.sh")], stdout=subprocess.PIPE, text=True)
    if r.returncode != 0:
        sys.exit(r.returncode)
    return r.stdout.strip().splitlines()[-1]


def rss_kb(pid):
    try:
        with open("/proc/%d/status" % pid) as f:
            for line in f:
                if line.startswith("VmRSS:"):
                    return int(line.split()[1])
    except OSError:
        pass
    return None


def cpu_seconds(pid):
    """utime + stime of every thread so far, from /proc/<pid>/stat."""
    try:
        with open("/proc/%d/stat" % pid) as f:
            fields = f.read().rsplit(")", 1)[1].split()
    except OSError:
        return None
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


def get_count(conn, n, timeout):
    """One GET /?n=n on a keep-alive connection; returns (status, body)."""
    conn.timeout = timeout
    if conn.sock is not None:
        conn.sock.settimeout(timeout)
    conn.request("GET", "/?n=%d" % n, headers={"Host": "main"})
    response = conn.getresponse()
    return response.status, response.read().decode("utf-8", "replace")


def wait_ready(proc, port, timeout):
    """Polls GET /?n=0 (no subrequest) until workerd answers "0" or gives up."""
    end = time.monotonic() + timeout
    last = "no attempt"
    while time.monotonic() < end:
        if proc.poll() is not None:
            return "workerd exited with status %d before answering" % proc.returncode
        conn = http.client.HTTPConnection("127.0.0.1", port, timeout=2.0)
        try:
            status, body = get_count(conn, 0, 2.0)
            if status == 200 and body == "0":
                return None
            last = "answered %d %r" % (status, body[:200])
        except (OSError, http.client.HTTPException) as e:
            last = "%s: %s" % (type(e).__name__, e)
        finally:
            conn.close()
        time.sleep(0.2)
    return "workerd did not answer GET /?n=0 within %.0f s (last: %s)" % (timeout, last)


def stop(proc, timeout):
    """SIGTERM, then SIGKILL; returns how it ended and how long the SIGTERM took."""
    if proc.poll() is not None:
        return {"returncode": proc.returncode, "sigkill": False, "stop_seconds": 0.0,
                "exited_before_stop": True}
    t0 = time.monotonic()
    proc.send_signal(signal.SIGTERM)
    killed = False
    try:
        proc.wait(timeout)
    except subprocess.TimeoutExpired:
        proc.kill()
        proc.wait()
        killed = True
    return {"returncode": proc.returncode, "sigkill": killed,
            "stop_seconds": round(time.monotonic() - t0, 3), "exited_before_stop": False}


def describe_status(returncode):
    if returncode is None:
        return None
    if returncode < 0:
        return signal.Signals(-returncode).name
    return "exit %d" % returncode


def drive(args, proc, port, summary):
    """The bounded request loop; fills summary and returns an error string or None."""
    deadline = time.monotonic() + args.deadline
    counts = []
    left = args.subrequests
    while left > 0:
        n = min(args.per_request, left)
        counts.append(n)
        left -= n
    sample_at = {len(counts) * k // RSS_SAMPLES for k in range(1, RSS_SAMPLES + 1)}
    latencies = []
    served = 0
    conn = http.client.HTTPConnection("127.0.0.1", port, timeout=args.request_timeout)
    error = None
    t0 = time.monotonic()
    try:
        for i, n in enumerate(counts):
            if time.monotonic() > deadline:
                error = "deadline of %.0f s passed after %d requests" % (args.deadline, i)
                break
            start = time.monotonic()
            try:
                status, body = get_count(conn, n, args.request_timeout)
            except (OSError, http.client.HTTPException) as e:
                error = "request %d (n=%d) failed: %s: %s" % (i, n, type(e).__name__, e)
                if proc.poll() is not None:
                    error += "; workerd exited with %s" % describe_status(proc.returncode)
                break
            latencies.append(time.monotonic() - start)
            if status != 200 or body.strip() != str(n):
                error = "request %d (n=%d) answered %d %r" % (i, n, status, body[:200])
                break
            served += n
            if i + 1 in sample_at:
                summary["rss_kb_samples"].append([served, rss_kb(proc.pid)])
    finally:
        conn.close()
    seconds = time.monotonic() - t0
    summary.update({
        "requests": len(latencies),
        "subrequests": served,
        "seconds": round(seconds, 3),
        "subrequests_per_s": round(served / seconds, 1) if seconds > 0 else None,
    })
    if latencies:
        ordered = sorted(latencies)
        summary["latency_s"] = {
            "median": round(statistics.median(ordered), 4),
            "p90": round(ordered[min(len(ordered) - 1, int(0.9 * len(ordered)))], 4),
            "max": round(ordered[-1], 4),
        }
    if args.latencies:
        with open(args.latencies, "w") as f:
            f.writelines("%.6f\n" % x for x in latencies)
    return error


def collect_then_serve(args, proc, port, inspector_port, summary):
    """The inspector's collection, then a few more requests (new epochs after it)."""
    try:
        summary["collected"] = inspector.collect(inspector_port, args.collect.split(","))
    except OSError as e:
        return "collection through the inspector failed: %s" % e
    conn = http.client.HTTPConnection("127.0.0.1", port, timeout=args.request_timeout)
    try:
        for i in range(args.after_collect):
            status, body = get_count(conn, 1, args.request_timeout)
            if status != 200 or body.strip() != "1":
                return "request %d after the collection answered %d %r" % (i, status, body[:200])
    except (OSError, http.client.HTTPException) as e:
        return "request after the collection failed: %s: %s" % (type(e).__name__, e)
    finally:
        conn.close()
    summary["after_collect"] = args.after_collect
    return None


def main():
    args = parse_args()
    workerd = args.workerd or find_workerd()
    if not os.access(workerd, os.X_OK):
        die("workerd binary %s is not executable" % workerd)
    env = dict(os.environ)
    env.update(item.split("=", 1) for item in args.env)

    if args.log:
        log_path = os.path.abspath(args.log)
        log = open(log_path, "w")
    else:
        fd, log_path = tempfile.mkstemp(prefix="workerd-drive-", suffix=".log")
        log = os.fdopen(fd, "w")
    listener = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
    listener.bind(("127.0.0.1", 0))
    listener.listen(128)
    port = listener.getsockname()[1]
    fd = listener.fileno()
    command = [workerd, "serve", os.path.abspath(args.config), "--socket-fd",
               "http=%d" % fd]
    inspector_port = None
    if args.collect:
        # workerd binds the inspector itself: a port that was free a moment ago, on loopback.
        probe = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
        probe.bind(("127.0.0.1", 0))
        inspector_port = probe.getsockname()[1]
        probe.close()
        command += ["--inspector-addr", "127.0.0.1:%d" % inspector_port]
    proc = subprocess.Popen(command, env=env, stdin=subprocess.DEVNULL, stdout=log,
                            stderr=subprocess.STDOUT, pass_fds=(fd,),
                            cwd=os.path.dirname(os.path.abspath(args.config)))
    # Only workerd may accept on it from now on.
    listener.close()

    summary = {"workerd": workerd, "port": port, "pid": proc.pid, "log": log_path,
               "extra_env": args.env, "per_request": args.per_request,
               "requests": 0, "subrequests": 0, "seconds": None, "subrequests_per_s": None,
               "rss_kb_samples": []}
    error = None
    try:
        error = wait_ready(proc, port, args.startup_timeout)
        if error is None:
            summary["rss_start_kb"] = rss_kb(proc.pid)
            error = drive(args, proc, port, summary)
            if error is None and args.collect:
                error = collect_then_serve(args, proc, port, inspector_port, summary)
            summary["rss_end_kb"] = rss_kb(proc.pid)
            summary["workerd_cpu_s"] = cpu_seconds(proc.pid)
            if summary["rss_start_kb"] and summary["rss_end_kb"] and summary["subrequests"]:
                growth = (summary["rss_end_kb"] - summary["rss_start_kb"]) * 1024
                summary["rss_growth_bytes_per_subrequest"] = round(
                    growth / summary["subrequests"], 1)
    finally:
        ended = stop(proc, args.stop_timeout)
        log.close()
    ended["status"] = describe_status(ended["returncode"])
    if ended["returncode"] != 0:
        # what workerd said last: a V8 fatal error or KJ's crash report names the cause
        with open(log_path, errors="replace") as f:
            ended["log_tail"] = f.read().splitlines()[-LOG_TAIL:]
    summary["workerd_exit"] = ended
    summary["ok"] = error is None
    if error:
        summary["error"] = error
    # One key a line: readable by a person, still a single JSON object for the scripts.
    print("{\n" + ",\n".join(" %s: %s" % (json.dumps(k), json.dumps(v))
                              for k, v in summary.items()) + "\n}")
    if error:
        print("drive.py: " + error, file=sys.stderr)
        sys.exit(1)


if __name__ == "__main__":
    main()
