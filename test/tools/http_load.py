"""Requests for the web server tests (t_nginx.sh, t_lighttpd.sh): http_load.py PORT COUNT
EVERY OTHER makes COUNT requests to 127.0.0.1:PORT, one connection each, of /index.html, and
of OTHER every EVERY-th one (i % EVERY == 0), and prints the statuses' counts and a digest of
the bodies: what a run under a tracer must print as natively."""
import hashlib
import http.client
import sys

port, count, every, other = int(sys.argv[1]), int(sys.argv[2]), int(sys.argv[3]), sys.argv[4]
digest, statuses = hashlib.sha256(), {}
for i in range(count):
    c = http.client.HTTPConnection("127.0.0.1", port, timeout=30)
    c.request("GET", "/index.html" if i % every else other)
    r = c.getresponse()
    digest.update(r.read())
    statuses[r.status] = statuses.get(r.status, 0) + 1
    c.close()
print(sorted(statuses.items()), digest.hexdigest())
