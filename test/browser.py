"""A headless Chromium driven over the DevTools protocol (--remote-debugging-pipe: no port,
no websocket library), for the tests of the analyzer's SVG and HTML output: load a file,
collect console errors and exceptions, evaluate script, click and type as a user does, and
take screenshots.  Chromium missing or failing to start is a failure, never a skip."""

import base64
import fcntl
import json
import os
import shutil
import subprocess
import tempfile
import time

from churncheck import fail

FLAGS = ["--headless", "--no-sandbox", "--disable-gpu", "--disable-quic", "--no-first-run",
         "--disable-background-networking", "--disable-component-update", "--disable-sync",
         "--remote-debugging-pipe"]


class Browser:
    def __init__(self, width=1280, height=900):
        exe = shutil.which("chromium")
        if not exe:
            fail("chromium is not installed (Debian package chromium; make check installs it)")
        self.profile = tempfile.mkdtemp(prefix="churn-chromium-")
        to_child, self.out = os.pipe()
        self.inp, from_child = os.pipe()

        # The child reads commands on fd 3 and answers on fd 4; the pipe ends are first moved
        # out of the way so that neither is overwritten by the other's dup2.
        def wire():
            a = fcntl.fcntl(to_child, fcntl.F_DUPFD, 10)
            b = fcntl.fcntl(from_child, fcntl.F_DUPFD, 10)
            os.dup2(a, 3)
            os.dup2(b, 4)

        self.proc = subprocess.Popen(
            [exe] + FLAGS + ["--user-data-dir=" + self.profile, "about:blank"],
            stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL,
            pass_fds=(3, 4), preexec_fn=wire)
        os.close(to_child)
        os.close(from_child)
        self.buf = b""
        self.next_id = 0
        self.events = []
        self.errors = []
        target = self.call("Target.createTarget", {"url": "about:blank"})["targetId"]
        self.session = self.call("Target.attachToTarget",
                                 {"targetId": target, "flatten": True})["sessionId"]
        for domain in ("Page", "Runtime", "Log"):
            self.call(domain + ".enable", session=True)
        self.call("Emulation.setDeviceMetricsOverride",
                  {"width": width, "height": height, "deviceScaleFactor": 1, "mobile": False},
                  session=True)

    def close(self):
        try:
            self.proc.kill()
            self.proc.wait(timeout=10)
        finally:
            os.close(self.out)
            os.close(self.inp)
            shutil.rmtree(self.profile, ignore_errors=True)

    def _read(self, deadline):
        while b"\0" not in self.buf:
            if time.time() > deadline:
                fail("chromium did not answer within the time limit")
            chunk = os.read(self.inp, 1 << 20)
            if not chunk:
                fail("chromium exited (status %s)" % self.proc.poll())
            self.buf += chunk
        msg, self.buf = self.buf.split(b"\0", 1)
        msg = json.loads(msg)
        if "id" not in msg:
            self._event(msg)
        return msg

    def _event(self, msg):
        self.events.append(msg)
        method, p = msg.get("method"), msg.get("params", {})
        if method == "Runtime.exceptionThrown":
            d = p["exceptionDetails"]
            self.errors.append("exception: %s" % d.get("exception", {}).get("description", d.get("text")))
        elif method == "Runtime.consoleAPICalled" and p.get("type") in ("error", "assert"):
            self.errors.append("console.%s: %s" % (p["type"], " ".join(
                str(a.get("value", a.get("description"))) for a in p.get("args", []))))
        elif method == "Log.entryAdded" and p["entry"].get("level") == "error":
            self.errors.append("log: %s" % p["entry"].get("text"))

    def call(self, method, params=None, session=False, timeout=60):
        self.next_id += 1
        msg = {"id": self.next_id, "method": method, "params": params or {}}
        if session:
            msg["sessionId"] = self.session
        os.write(self.out, json.dumps(msg).encode() + b"\0")
        deadline = time.time() + timeout
        while True:
            reply = self._read(deadline)
            if reply.get("id") == self.next_id:
                if "error" in reply:
                    fail("chromium: %s: %s" % (method, reply["error"].get("message")))
                return reply.get("result", {})

    def wait_event(self, method, timeout=60):
        deadline = time.time() + timeout
        for i, e in enumerate(self.events):
            if e.get("method") == method:
                return self.events.pop(i)
        while True:
            msg = self._read(deadline)
            if msg.get("method") == method:
                self.events.remove(msg)
                return msg

    def load(self, path):
        """Opens a local file; returns the seconds from navigation to the load event."""
        self.events = []
        start = time.time()
        self.call("Page.navigate", {"url": "file://" + os.path.abspath(path)}, session=True)
        self.wait_event("Page.loadEventFired")
        return time.time() - start

    def eval(self, expr):
        r = self.call("Runtime.evaluate", {"expression": expr, "returnByValue": True},
                      session=True)
        if "exceptionDetails" in r:
            fail("script %r failed: %s" % (expr[:60], r["exceptionDetails"].get("text")))
        return r["result"].get("value")

    def click(self, x, y):
        for kind in ("mouseMoved", "mousePressed", "mouseReleased"):
            self.call("Input.dispatchMouseEvent", {"type": kind, "x": x, "y": y,
                                                   "button": "left" if kind != "mouseMoved" else "none",
                                                   "clickCount": 1}, session=True)

    def hover(self, x, y):
        self.call("Input.dispatchMouseEvent", {"type": "mouseMoved", "x": x, "y": y},
                  session=True)

    def type(self, text):
        self.call("Input.insertText", {"text": text}, session=True)

    def screenshot(self, path, full_page=True):
        params = {"format": "png"}
        if full_page:
            size = self.eval("[document.documentElement.scrollWidth, document.documentElement.scrollHeight]")
            params["clip"] = {"x": 0, "y": 0, "width": size[0], "height": size[1], "scale": 1}
            params["captureBeyondViewport"] = True
        data = self.call("Page.captureScreenshot", params, session=True)["data"]
        with open(path, "wb") as f:
            f.write(base64.b64decode(data))
