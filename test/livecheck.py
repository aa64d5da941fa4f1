"""Helpers of the tests of `churn serve` and `churn watch` (t_serve_*.sh, t_live_follow.sh,
t_watch.sh): HTTP requests to 127.0.0.1 and waits, each bounded, and /metrics parsed."""
import http.client
import re
import time

from churncheck import fail


def get(port, path, timeout=60):
    """(status, headers, body) of GET path on 127.0.0.1:port."""
    c = http.client.HTTPConnection("127.0.0.1", port, timeout=timeout)
    try:
        c.request("GET", path)
        r = c.getresponse()
        return r.status, dict(r.getheaders()), r.read()
    finally:
        c.close()


SAMPLE = re.compile(r'^([a-zA-Z_:][a-zA-Z0-9_:]*)(\{(.*)\})? (\S+)$')
LABEL = re.compile(r'([a-zA-Z_][a-zA-Z0-9_]*)="((?:[^"\\]|\\.)*)"')


def parse(text):
    """[(name, {label: value}, float)] of a Prometheus text exposition."""
    out = []
    for line in text.splitlines():
        if not line or line.startswith("#"):
            continue
        m = SAMPLE.match(line)
        if not m:
            fail("not a sample line of the exposition: %r" % line)
        labels = {k: v.replace('\\"', '"').replace("\\n", "\n").replace("\\\\", "\\")
                  for k, v in LABEL.findall(m.group(3) or "")}
        out.append((m.group(1), labels, float(m.group(4))))
    return out


def metrics(port):
    status, _, body = get(port, "/metrics")
    if status != 200:
        fail("/metrics answered %d: %s" % (status, body[:200]))
    return parse(body.decode())


def values(samples, name, **labels):
    return [v for n, l, v in samples
            if n == name and all(l.get(k) == want for k, want in labels.items())]


def value(samples, name, **labels):
    """The one sample of name with these labels, or None."""
    found = values(samples, name, **labels)
    if len(found) > 1:
        fail("%d samples of %s %s" % (len(found), name, labels))
    return found[0] if found else None


def wait(what, fn, timeout, every=0.2, then=None):
    """fn()'s first true value, asked every `every` seconds for at most timeout seconds; on
    failing, then() says what was seen instead."""
    end = time.monotonic() + timeout
    while True:
        got = fn()
        if got:
            return got
        if time.monotonic() > end:
            fail("waited %d s for %s%s" % (timeout, what, "; " + then() if then else ""))
        time.sleep(every)


def states(port):
    """The state column of churn serve's index page, a row each, joined."""
    _, _, body = get(port, "/")
    rows = re.findall(r"<tr><td>(\d+)</td><td>[^<]*</td><td>([^<]*)</td>", body.decode())
    return "; ".join("pid %s: %s" % r for r in rows) or "no process listed"
