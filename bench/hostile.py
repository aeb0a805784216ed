#!/usr/bin/env python3
"""Hostile clients against one CallVeil listener, for `make overload` and the listener tests.

Keeps COUNT sockets of one kind open against 127.0.0.1:PORT for SECONDS, opening a new one whenever the server
closes one, and prints one JSON line of what they got:

  silent   TCP connections that never send a byte
  half     half a handshake: half a TLS ClientHello (tls), half the HTTP/2 preface (h2c) or half a request line
  trickle  a complete handshake (TLS with ALPN h2, or h2c prior knowledge, or HTTP/1.1), then a POST to PATH
           declaring a 100,000-byte body and sending one byte of it per second
  fill     (h2c or tls) one connection, COUNT streams each POSTing a body of STREAM_BYTES to PATH at full speed but
           for its last byte, held open; prints the statuses the streams got within SECONDS

`hostile.py row FILE [CELL]` prints the Markdown table row of a saved JSON line (silent, half or trickle), after CELL
when given: label, sockets, opened, closed by the server, median life, longest closed life, open at the end.

Protocols: http1, h2c, tls (certificate not verified: the test's own). Uses the h2 package (PyPI), as
scripts/ohttp-client.py does; nothing of CallVeil's code. Loopback only.
"""
import argparse
import json
import socket
import ssl
import statistics
import sys
import threading
import time

import h2.config
import h2.connection


def parse():
    p = argparse.ArgumentParser()
    p.add_argument("--port", type=int, required=True)
    p.add_argument("--protocol", choices=["http1", "h2c", "tls"], default="http1")
    p.add_argument("--mode", choices=["silent", "half", "trickle", "fill"], required=True)
    p.add_argument("--stream-bytes", type=int, default=4 << 20)
    p.add_argument("--count", type=int, default=50)
    p.add_argument("--seconds", type=float, default=20)
    p.add_argument("--path", default="/queries")
    p.add_argument("--label", default="")
    p.add_argument("--header", action="append", default=[], help="fill: NAME:VALUE added to every stream's headers")
    return p.parse_args()


class Tally:
    def __init__(self):
        self.lock = threading.Lock()
        self.opened = 0
        self.closed_by_server = 0
        self.connect_failures = 0
        self.handshake_failures = 0
        self.lifetimes = []
        self.bytes_sent = 0
        self.open_at_end = 0

    def add(self, **kw):
        with self.lock:
            for k, v in kw.items():
                setattr(self, k, getattr(self, k) + v)


HALF_CLIENT_HELLO = bytes([0x16, 0x03, 0x01, 0x02, 0x00, 0x01, 0x00, 0x01, 0xFC, 0x03, 0x03])


def tls(raw):
    """The socket wrapped in TLS offering ALPN h2 (the test certificate is not verified)."""
    context = ssl.create_default_context()
    context.check_hostname = False
    context.verify_mode = ssl.CERT_NONE
    context.set_alpn_protocols(["h2"])
    return context.wrap_socket(raw, server_hostname="localhost")


def closed(sock):
    """Whether the peer closed (or reset) the connection; answers read are drained."""
    try:
        sock.setblocking(False)
        data = sock.recv(65536)
        return data == b""
    except (BlockingIOError, ssl.SSLWantReadError):
        return False
    except (OSError, ssl.SSLError):
        return True
    finally:
        try:
            sock.setblocking(True)
        except OSError:
            pass


def one(args, tally, deadline):
    """One socket slot: open, hold in the chosen way, reopen when closed, until the deadline."""
    while time.monotonic() < deadline:
        try:
            raw = socket.create_connection(("127.0.0.1", args.port), timeout=5)
        except OSError:
            tally.add(connect_failures=1)
            time.sleep(0.5)
            continue
        tally.add(opened=1)
        opened = time.monotonic()
        sock = raw
        conn = None
        stream = None
        try:
            if args.mode == "half":
                if args.protocol == "tls":
                    raw.sendall(HALF_CLIENT_HELLO)
                elif args.protocol == "h2c":
                    raw.sendall(b"PRI * HTTP/2.0\r\n")
                else:
                    raw.sendall(b"POST " + args.path.encode() + b" HT")
            elif args.mode == "trickle":
                if args.protocol == "tls":
                    sock = tls(raw)
                if args.protocol in ("tls", "h2c"):
                    conn = h2.connection.H2Connection(h2.config.H2Configuration(client_side=True))
                    conn.initiate_connection()
                    stream = conn.get_next_available_stream_id()
                    conn.send_headers(stream, [(":method", "POST"), (":scheme", "https" if args.protocol == "tls" else "http"),
                                               (":authority", "localhost"), (":path", args.path),
                                               ("content-type", "message/ohttp-req" if "ohttp" in args.path else "application/protobuf"),
                                               ("content-length", "100000"), ("user-agent", "hostile")])
                    sock.sendall(conn.data_to_send())
                else:
                    sock.sendall(b"POST " + args.path.encode() + b" HTTP/1.1\r\nHost: localhost\r\nUser-Agent: hostile\r\n"
                                 b"Content-Type: message/ohttp-req\r\nContent-Length: 100000\r\n\r\n")
        except (OSError, ssl.SSLError):
            tally.add(handshake_failures=1)
            tally.add(closed_by_server=1, lifetimes=[time.monotonic() - opened])
            try:
                sock.close()
            except OSError:
                pass
            continue
        while time.monotonic() < deadline:
            time.sleep(1)
            if closed(sock):
                tally.add(closed_by_server=1, lifetimes=[time.monotonic() - opened])
                break
            if args.mode == "trickle":
                try:
                    if conn is not None:
                        conn.send_data(stream, b"x")
                        sock.sendall(conn.data_to_send())
                    else:
                        sock.sendall(b"x")
                    tally.add(bytes_sent=1)
                except Exception:
                    tally.add(closed_by_server=1, lifetimes=[time.monotonic() - opened])
                    break
        else:
            tally.add(open_at_end=1)
        try:
            sock.close()
        except OSError:
            pass


def fill(args):
    """One HTTP/2 connection holding COUNT nearly complete uploads; the statuses its streams got."""
    import h2.events
    raw = socket.create_connection(("127.0.0.1", args.port), timeout=30)
    sock = raw
    if args.protocol == "tls":
        sock = tls(raw)
    conn = h2.connection.H2Connection(h2.config.H2Configuration(client_side=True))
    conn.initiate_connection()
    sock.sendall(conn.data_to_send())
    pending = {}
    for _ in range(args.count):
        stream = conn.get_next_available_stream_id()
        conn.send_headers(stream, [(":method", "POST"), (":scheme", "https" if args.protocol == "tls" else "http"),
                                   (":authority", "localhost"), (":path", args.path), ("content-type", "message/ohttp-req"),
                                   ("content-length", str(args.stream_bytes)), ("user-agent", "hostile")]
                          + [(name.lower(), value) for name, _, value in (h.partition(":") for h in args.header)])
        pending[stream] = args.stream_bytes - 1
    sock.sendall(conn.data_to_send())
    statuses = {}
    deadline = time.monotonic() + args.seconds
    sock.settimeout(0.05)
    while time.monotonic() < deadline:
        for stream, left in list(pending.items()):
            if stream in statuses or left <= 0:
                continue
            window = min(conn.local_flow_control_window(stream), conn.max_outbound_frame_size, left)
            if window > 0:
                conn.send_data(stream, b"\0" * window)
                pending[stream] = left - window
        sock.sendall(conn.data_to_send())
        try:
            data = sock.recv(65536)
        except (socket.timeout, ssl.SSLWantReadError):
            continue
        if not data:
            break
        for event in conn.receive_data(data):
            if isinstance(event, h2.events.ResponseReceived):
                statuses[event.stream_id] = dict(event.headers).get(b":status", b"?").decode()
            elif isinstance(event, h2.events.StreamReset) and event.stream_id not in statuses:
                statuses[event.stream_id] = "reset"
        sock.sendall(conn.data_to_send())
    sent = {s: args.stream_bytes - 1 - left for s, left in pending.items()}
    print(json.dumps({"label": f"{args.protocol} fill {args.path}", "streams": args.count, "stream_bytes": args.stream_bytes,
                      "statuses": [statuses.get(s, "none") for s in sorted(pending)],
                      "sent": [sent[s] for s in sorted(pending)]}), flush=True)
    sock.close()


def row(path, cell=None):
    """The Markdown table row of one saved report, after `cell` when given."""
    r = json.load(open(path))
    cells = [r['label'], r['sockets'], r['opened'], r['closed_by_server'], r['median_life_s'], r['max_life_s'], r['open_at_end']]
    print("| " + " | ".join(str(c) for c in ([cell] if cell is not None else []) + cells) + " |")


def main():
    if sys.argv[1:2] == ["row"]:
        return row(*sys.argv[2:4])
    args = parse()
    if args.mode == "fill":
        return fill(args)
    tally = Tally()
    deadline = time.monotonic() + args.seconds
    threads = [threading.Thread(target=one, args=(args, tally, deadline), daemon=True) for _ in range(args.count)]
    for t in threads:
        t.start()
        time.sleep(0.005)
    for t in threads:
        t.join(args.seconds + 15)
    closed_lives = sorted(tally.lifetimes)
    print(json.dumps({
        "label": args.label or f"{args.protocol} {args.mode} {args.path if args.mode == 'trickle' else ''}".strip(),
        "protocol": args.protocol, "mode": args.mode, "sockets": args.count, "seconds": args.seconds,
        "opened": tally.opened, "closed_by_server": tally.closed_by_server, "connect_failures": tally.connect_failures,
        "handshake_failures": tally.handshake_failures, "bytes_sent": tally.bytes_sent, "open_at_end": tally.open_at_end,
        "median_life_s": round(statistics.median(closed_lives), 2) if closed_lives else None,
        "max_life_s": round(closed_lives[-1], 2) if closed_lives else None,
    }), flush=True)


if __name__ == "__main__":
    main()
