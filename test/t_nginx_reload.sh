#!/bin/sh
# nginx reloads (Debian 12's nginx-light 1.22.1-9+deb12u11, checked against that version):
# each reload (SIGHUP) builds a new cycle, and with a regex location nginx 1.22 with PCRE2
# compiles it into a new compile context that nothing frees: 72 bytes per reload.  Under
# `churn run --epoch-at ngx_init_cycle` (an epoch per cycle), 30 reloads, each waited for
# in the error log, then SIGQUIT.  The master's report, with its default window:
#  - the steady window leaves out the start-up (the first cycle, before any reload) and its
#    live growth is about 72 B/epoch, where every epoch reads hundreds of bytes more;
#  - the verdict names the growth's function with the PCRE2 compile context that holds it,
#    at about 72 B per epoch (within its bound), live at end, not leaked: nginx caught the
#    SIGQUIT.
. test/lib.sh

VERSION=1.22.1-9+deb12u11
command -v nginx >/dev/null || fail "nginx is missing (Debian nginx-light; make check installs it)"
got=$(dpkg-query -W -f '${Version}' nginx-light 2>/dev/null) || fail "nginx-light is not installed"
[ "$got" = "$VERSION" ] || fail "nginx-light $got: this test was checked against $VERSION"

RELOADS=30
mkdir -p "$WORK/html" "$WORK/tmp"
echo hello >"$WORK/html/index.html"
cat >"$WORK/nginx.conf" <<EOF
daemon off;
master_process on;
worker_processes 1;
error_log $WORK/error.log notice;
pid $WORK/nginx.pid;
events { worker_connections 64; }
http {
  access_log off;
  client_body_temp_path $WORK/tmp;
  proxy_temp_path $WORK/tmp;
  fastcgi_temp_path $WORK/tmp;
  uwsgi_temp_path $WORK/tmp;
  scgi_temp_path $WORK/tmp;
  server {
    listen 127.0.0.1:$port;
    root $WORK/html;
    location ~ ^/item/([0-9]+)$ { return 200 "item \$1\n"; }
  }
}
EOF

rm -f "$WORK"/t.* "$WORK/nginx.pid"
timeout 180 "$ROOT/build/churn" run --epoch-at ngx_init_cycle -o "$WORK/t.zst" \
    nginx -c "$WORK/nginx.conf" -p "$WORK" >"$WORK/churn.out" 2>"$WORK/churn.err" &
cpid=$!
i=0
until [ -s "$WORK/nginx.pid" ] && grep -q "start worker process" "$WORK/error.log" 2>/dev/null; do
    i=$((i + 1))
    [ $i -lt 300 ] || { kill $cpid; fail "nginx did not start: $(tail -n 1 "$WORK/churn.err")"; }
    sleep 0.1
done
master=$(cat "$WORK/nginx.pid")
for r in $(seq 1 $RELOADS); do
    kill -HUP "$master"
    i=0
    until [ "$(grep -c ': reconfiguring$' "$WORK/error.log")" -ge "$r" ]; do
        i=$((i + 1))
        [ $i -lt 300 ] || { kill $cpid; fail "reload $r was not logged"; }
        sleep 0.05
    done
done
answer=$(python3 -c "
import urllib.request
print(urllib.request.urlopen('http://127.0.0.1:$port/item/42').read().decode().strip())")
[ "$answer" = "item 42" ] || { kill $cpid; fail "nginx answered '$answer' after the reloads"; }
kill -QUIT "$master"
status=0
wait $cpid || status=$?
[ $status -eq 0 ] || fail "nginx under churn run exited $status: $(tail -n 1 "$WORK/churn.err")"

analyze "$WORK/t.zst" "$WORK/steady.json"
analyze "$WORK/t.zst" "$WORK/all.json" --all-epochs
"$ANALYZE" "$WORK/t.zst" >"$WORK/steady.txt" 2>&1 || fail "churn-analyze t.zst failed"
check "$WORK/steady.json" "$WORK/all.json" "$WORK/steady.txt" $RELOADS <<'PY'
import re, sys
from churncheck import *
steady, whole, text, reloads = load(sys.argv[1]), load(sys.argv[2]), open(sys.argv[3]).read(), int(sys.argv[4])
if field(steady, "metadata", "last_epoch") < reloads:
    fail("the master's trace has epochs up to %d for %d reloads" % (steady["metadata"]["last_epoch"], reloads))
w = field(steady, "steady_window")
if w["how"] != "found" or w["first"] < 1:
    fail("the start-up is in the steady window: %r" % w)
live = field(steady, "trends", "live_bytes_per_epoch")
if not 60 <= live <= 90:
    fail("live bytes grow %.1f B/epoch over the steady window, not about 72" % live)
everything = field(whole, "trends", "live_bytes_per_epoch")
if everything < 3 * live:
    fail("every epoch reads %.1f B/epoch, near the steady window's %.1f: no start-up to leave out"
         % (everything, live))
v = field(steady, "verdict")
top = field(v, "functions")[0]
if not 60 <= top["bytes_per_epoch"] <= 90:
    fail("the verdict's first function grows %r B/epoch, not about 72" % top["bytes_per_epoch"])
said = " ".join(field(v, "sentences"))
if not re.search(r"pcre2_compile_context_create", said) or "ngx_regex_compile" not in said:
    fail("the verdict does not name the PCRE2 compile context: %r" % said)
if not re.search(r"\+7\dB( \+-\d+B)? per epoch", said):
    fail("the verdict does not say about +72B per epoch: %r" % said)
b = top["bytes_per_epoch_bound"]
if b is None or abs(top["bytes_per_epoch"] - 72) > max(b, 2):
    fail("the verdict's %r +- %r B/epoch does not cover 72" % (top["bytes_per_epoch"], b))
# nginx caught the SIGQUIT that stopped it: what the PCRE2 contexts hold is live at end
expect("the PCRE2 contexts' retention", top["retention"], "live")
if "leaked" in said or "live at end" not in said:
    fail("the verdict does not call the PCRE2 contexts live at end: %r" % said)
print("nginx, %d reloads: window %d..%d, live +%.1f B/epoch (every epoch: %.1f); verdict: %s"
      % (reloads, w["first"], w["last"], live, everything, said))
PY
echo "ok: nginx reloads: the steady window gives the PCRE2 context's 72 B per reload, named in the verdict"
