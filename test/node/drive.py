"""Starts node on test/node/server.js and puts a bounded loopback load on it: one keep-alive
connection, one request at a time (so each request is one epoch when epochs begin at every
HTTP message node parses), then GET /exit.  Prints a JSON summary: node's pid, the answers
(node's own arrayBuffers figure after every request) and how node ended.
"""
import argparse
import http.client
import json
import os
import subprocess
import sys
import time


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--node", default="node")
    ap.add_argument("--mode", choices=("leak", "clean", "closure"), required=True)
    ap.add_argument("--requests", type=int, required=True)
    ap.add_argument("--log", required=True, help="node's stderr")
    ap.add_argument("--env", action="append", default=[], help="NAME=VALUE for node")
    ap.add_argument("--cwd", default=None, help="node's working directory")
    args = ap.parse_args()

    env = dict(os.environ)
    for item in args.env:
        name, _, value = item.partition("=")
        env[name] = value
    server = os.path.join(os.path.dirname(os.path.abspath(__file__)), "server.js")
    with open(args.log, "wb") as log:
        node = subprocess.Popen([args.node, server, args.mode], env=env, stdin=subprocess.DEVNULL,
                                stdout=subprocess.PIPE, stderr=log, cwd=args.cwd)
    answers = []
    error = None
    try:
        line = node.stdout.readline()
        if not line.strip().isdigit():
            raise RuntimeError("node did not print its port (got %r)" % line[:80])
        conn = http.client.HTTPConnection("127.0.0.1", int(line), timeout=60)
        for n in range(1, args.requests + 1):
            conn.request("GET", "/work")
            reply = conn.getresponse()
            body = reply.read()
            if reply.status != 200:
                raise RuntimeError("request %d: HTTP %d %r" % (n, reply.status, body[:80]))
            answer = json.loads(body)
            if answer["served"] != n:
                raise RuntimeError("request %d answered as request %d" % (n, answer["served"]))
            answers.append(answer)
        conn.request("GET", "/exit")
        conn.getresponse().read()
        conn.close()
    except (OSError, ValueError, RuntimeError, http.client.HTTPException) as e:
        error = str(e)
    try:
        status = node.wait(timeout=60)
    except subprocess.TimeoutExpired:
        node.kill()
        status = node.wait()
        error = error or "node did not exit after /exit"
    ended = "exit %d" % status if status >= 0 else "signal %d" % -status
    json.dump({"pid": node.pid, "mode": args.mode, "answers": answers, "node_exit": ended,
               "error": error}, sys.stdout)
    print()
    if error or ended != "exit 0":
        print("node: %s, %s (log %s)" % (error or "no protocol error", ended, args.log),
              file=sys.stderr)
        sys.exit(1)


if __name__ == "__main__":
    main()
