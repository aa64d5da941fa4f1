"""The part of V8's inspector protocol that test/workerd/drive.py needs: a WebSocket client
(RFC 6455, text frames, client-side masking) written here because Debian's python3 has none
in its standard library, and one command, a heap snapshot, which makes V8 run a full
collection of the isolate first.  workerd serves one inspector target per worker
(GET /json/list); HeapProfiler.collectGarbage gets no answer from it, takeHeapSnapshot does."""
import base64
import json
import os
import socket
import struct


def _recv_exact(sock, n):
    buf = b""
    while len(buf) < n:
        chunk = sock.recv(n - len(buf))
        if not chunk:
            raise OSError("inspector closed the connection")
        buf += chunk
    return buf


def _recv_frame(sock):
    """One frame as (first byte, payload), or None where the server closed the connection."""
    first = sock.recv(1)
    if not first:
        return None
    b0, b1 = first[0], _recv_exact(sock, 1)[0]
    n = b1 & 0x7F
    if n == 126:
        n = struct.unpack(">H", _recv_exact(sock, 2))[0]
    elif n == 127:
        n = struct.unpack(">Q", _recv_exact(sock, 8))[0]
    return b0, _recv_exact(sock, n)


class Target:
    def __init__(self, host, port, name, timeout):
        self.sock = socket.create_connection((host, port), timeout=timeout)
        key = base64.b64encode(os.urandom(16)).decode()
        self.sock.sendall(("GET /%s HTTP/1.1\r\nHost: %s:%d\r\nUpgrade: websocket\r\n"
                           "Connection: Upgrade\r\nSec-WebSocket-Key: %s\r\n"
                           "Sec-WebSocket-Version: 13\r\n\r\n" % (name, host, port, key)).encode())
        head = b""
        while b"\r\n\r\n" not in head:
            head += _recv_exact(self.sock, 1)
        if b" 101 " not in head.split(b"\r\n", 1)[0]:
            raise OSError("inspector target %s refused the upgrade: %r" % (name, head[:80]))
        self.next_id = 1

    def close(self):
        """The closing handshake, then the server's end of the connection: workerd's
        inspector thread holds a reference to the worker's isolate until its request is over,
        and a SIGTERM while it still does races workerd's V8::Dispose on the main thread (V8
        traps in IsolateGroup::TearDownOncePerProcess).  Seeing the server close the
        connection says the request is over and that reference gone."""
        try:
            self._send(struct.pack(">H", 1000), opcode=0x8)
            while _recv_frame(self.sock) is not None:
                pass
        except OSError:
            pass
        finally:
            self.sock.close()

    def _send(self, data, opcode=0x1):
        if isinstance(data, str):
            data = data.encode()
        mask = os.urandom(4)
        n = len(data)
        if n < 126:
            head = struct.pack(">BB", 0x80 | opcode, 0x80 | n)
        elif n < 65536:
            head = struct.pack(">BBH", 0x80 | opcode, 0x80 | 126, n)
        else:
            head = struct.pack(">BBQ", 0x80 | opcode, 0x80 | 127, n)
        self.sock.sendall(head + mask + bytes(b ^ mask[i % 4] for i, b in enumerate(data)))

    def _recv(self):
        message = b""
        while True:
            frame = _recv_frame(self.sock)
            if frame is None or frame[0] & 0x0F == 8:
                raise OSError("inspector closed the connection")
            message += frame[1]
            if frame[0] & 0x80:
                return json.loads(message.decode())

    def call(self, method, params=None):
        """Sends one command; returns its answer and how many events came before it."""
        ident = self.next_id
        self.next_id += 1
        self._send(json.dumps({"id": ident, "method": method, "params": params or {}}))
        events = 0
        while True:
            message = self._recv()
            if message.get("id") == ident:
                if "error" in message:
                    raise OSError("%s: %s" % (method, message["error"]))
                return message, events
            events += 1


def collect(port, names, timeout=120.0):
    """A full collection of each named worker's isolate; returns the snapshot chunks each sent."""
    chunks = {}
    for name in names:
        t = Target("127.0.0.1", port, name, timeout)
        try:
            t.call("HeapProfiler.enable")
            _, chunks[name] = t.call("HeapProfiler.takeHeapSnapshot", {"reportProgress": False})
        finally:
            t.close()
    return chunks
