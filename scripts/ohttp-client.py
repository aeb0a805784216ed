#!/usr/bin/env python3
"""An Oblivious HTTP client (RFC 9458) over an independent HPKE implementation, for interop tests.

Nothing here comes from CallVeil's Swift code: HPKE is pyhpke (RFC 9180), the AEAD and HKDF of the response are
`cryptography`'s, HTTP/2 is httpx over h2 (all from PyPI, installed by `make deps` into .build-venv). The RFC 9458
and RFC 9292 framing is written out below from the RFCs, and `selftest` checks it against RFC 9458 Appendix A.

  selftest                      RFC 9458 Appendix A, byte for byte (request encapsulation and response opening)
  make-cert DIR [IP ...] [--dns NAME ...]
                                a self-signed certificate for 127.0.0.1, localhost, the IPs and the DNS names given
                                (DIR/cert.pem, DIR/key.pem)
  terminate --listen HOST:PORT --target PORT --cert FILE --key FILE [--alpn PROTO ...]
                                a TLS terminator in front of 127.0.0.1:PORT offering only the ALPN protocols given (a
                                provider's load balancer; "listening PORT" once up): bytes pass through unchanged
  dns --txt NAME=TEXT ...       a DNS server on 127.0.0.1 (UDP; "listening PORT") answering TXT queries from the list,
                                and NXDOMAIN for every other name
  proxy --gateway URL --keys URL [--ca FILE] [--h2c] [--log FILE] [--authority NAME]
                                an HTTP/1.1 listener on 127.0.0.1 (port printed as "listening PORT") that sends every
                                request it receives through the gateway over HTTP/2, encapsulated, and answers with
                                the decapsulated response: a device client pointed at it talks Oblivious HTTP
  hold --port N --path P [--tls --ca FILE]
                                one HTTP/2 connection to 127.0.0.1:N (TLS with ALPN h2, or prior knowledge): GET P,
                                print "status S", then keep the connection open and never read again until killed,
                                as an idle relay connection that does not answer the server's GOAWAY ping
"""
import argparse
import datetime
import http.server
import json
import os
import signal
import socketserver
import sys
import threading

import httpx
from cryptography import x509
from cryptography.hazmat.primitives import hashes, hmac, serialization
from cryptography.hazmat.primitives.asymmetric import ec
from cryptography.hazmat.primitives.ciphers.aead import AESGCM, ChaCha20Poly1305
from cryptography.hazmat.primitives.kdf.hkdf import HKDFExpand
from cryptography.x509.oid import NameOID
from pyhpke import AEADId, CipherSuite, KDFId, KEMId, KEMKeyPair

# ---------------------------------------------------------------------------------------------------- RFC 9292

def varint(n):
    if n < 1 << 6:
        return bytes([n])
    if n < 1 << 14:
        return (n | 0x4000).to_bytes(2, "big")
    if n < 1 << 30:
        return (n | 0x80000000).to_bytes(4, "big")
    return (n | 0xC000000000000000).to_bytes(8, "big")


def lp(b):
    return varint(len(b)) + b


class Reader:
    def __init__(self, data):
        self.data, self.pos = data, 0

    def done(self):
        return self.pos >= len(self.data)

    def varint(self):
        first = self.data[self.pos]
        size = 1 << (first >> 6)
        value = first & 0x3F
        for b in self.data[self.pos + 1:self.pos + size]:
            value = value << 8 | b
        if self.pos + size > len(self.data):
            raise ValueError("truncated varint")
        self.pos += size
        return value

    def take(self, n):
        if self.pos + n > len(self.data):
            raise ValueError("truncated")
        out = self.data[self.pos:self.pos + n]
        self.pos += n
        return out


def encode_request(method, scheme, authority, path, headers, content, indeterminate=False):
    """A Binary HTTP request in the known-length (framing 0) or indeterminate-length (framing 2) form."""
    control = lp(method.encode()) + lp(scheme.encode()) + lp(authority.encode()) + lp(path.encode())
    fields = b"".join(lp(n.lower().encode()) + lp(v.encode()) for n, v in headers)
    if not indeterminate:
        sections = [lp(fields), lp(content), varint(0)]
        while sections and sections[-1] == b"\x00":
            sections.pop()  # trailing empty sections may be left out (RFC 9292 §3.8)
        return varint(0) + control + b"".join(sections)
    chunks = b"".join(lp(content[i:i + 1000]) for i in range(0, len(content), 1000))
    return varint(2) + control + fields + varint(0) + chunks + varint(0) + varint(0)


def decode_response(data):
    """(status, headers, content) of a Binary HTTP response, either framing, informational responses skipped."""
    r = Reader(data)
    framing = r.varint()
    if framing not in (1, 3):
        raise ValueError(f"not a response framing: {framing}")

    def fields():
        out = []
        if r.done():
            return out  # truncated: the remaining sections are empty (RFC 9292 §3.8)
        if framing == 1:
            section = Reader(r.take(r.varint()))
            while not section.done():
                name = section.take(section.varint())
                out.append((name.decode(), section.take(section.varint()).decode()))
            return out
        while True:
            size = r.varint()
            if size == 0:
                return out
            name = r.take(size)
            out.append((name.decode(), r.take(r.varint()).decode()))

    while True:
        status = r.varint()
        headers = fields()
        if not 100 <= status < 200:
            break
    if framing == 1:
        content = r.take(r.varint()) if not r.done() else b""
    else:
        content = b""
        while not r.done():
            size = r.varint()
            if size == 0:
                break
            content += r.take(size)
    return status, headers, content

# ---------------------------------------------------------------------------------------------------- RFC 9458

AEADS = {1: (AEADId.AES128_GCM, AESGCM, 16, 12), 2: (AEADId.AES256_GCM, AESGCM, 32, 12),
         3: (AEADId.CHACHA20_POLY1305, ChaCha20Poly1305, 32, 12)}


def parse_key_configs(data):
    """[(key_id, public_key, [(kdf, aead)])] of an application/ohttp-keys body."""
    r, out = Reader(data), []
    while not r.done():
        config = Reader(r.take(int.from_bytes(r.take(2), "big")))
        key_id, kem = config.take(1)[0], int.from_bytes(config.take(2), "big")
        if kem != 0x0020:
            continue
        public = config.take(32)
        algs = Reader(config.take(int.from_bytes(config.take(2), "big")))
        suites = []
        while not algs.done():
            suites.append((int.from_bytes(algs.take(2), "big"), int.from_bytes(algs.take(2), "big")))
        out.append((key_id, public, suites))
    return out


def encapsulate(request, key_id, public_key, aead, eks=None):
    """(encapsulated request, context for the response)."""
    hdr = bytes([key_id]) + (0x0020).to_bytes(2, "big") + (1).to_bytes(2, "big") + aead.to_bytes(2, "big")
    suite = CipherSuite.new(KEMId.DHKEM_X25519_HKDF_SHA256, KDFId.HKDF_SHA256, AEADS[aead][0])
    info = b"message/bhttp request\x00" + hdr
    enc, sender = suite.create_sender_context(suite.kem.deserialize_public_key(public_key), info, eks=eks)
    return hdr + enc + sender.seal(request), (sender, enc, aead)


def decapsulate(response, context):
    sender, enc, aead = context
    _, cipher, nk, nn = AEADS[aead]
    size = max(nk, nn)
    secret = sender.export(b"message/bhttp response", size)
    nonce, ciphertext = response[:size], response[size:]
    h = hmac.HMAC(enc + nonce, hashes.SHA256())
    h.update(secret)
    prk = h.finalize()
    key = HKDFExpand(hashes.SHA256(), nk, b"key").derive(prk)
    aead_nonce = HKDFExpand(hashes.SHA256(), nn, b"nonce").derive(prk)
    return cipher(key).decrypt(aead_nonce, ciphertext, b"")

# ---------------------------------------------------------------------------------------------------- commands

def selftest():
    """RFC 9458 Appendix A: the client's side, byte for byte."""
    v = {"skR": "3c168975674b2fa8e465970b79c8dcf09f1c741626480bd4c6162fc5b6a98e1a",
         "keyConfig": "01002031e1f05a740102115220e9af918f738674aec95f54db6e04eb705aae8e79815500080001000100010003",
         "skE": "bc51d5e930bda26589890ac7032f70ad12e4ecb37abb1b65b1256c9c48999c73",
         "encRequest": "010020000100014b28f881333e7c164ffc499ad9796f877f4e1051ee6d31bad19dec96c208b4726374e46913590699"
                       "2e1268c594d2a10c695d858c40a026e7965e7d86b83dd440b2c0185204b4d63525",
         "encResponse": "c789e7151fcba46158ca84b04464910d86f9013e404feea014e7be4a441f234f857fbd"}
    config = bytes.fromhex(v["keyConfig"])
    [(key_id, public, suites)] = parse_key_configs(len(config).to_bytes(2, "big") + config)
    assert suites == [(1, 1), (1, 3)], suites
    request = encode_request("GET", "https", "example.com", "/", [], b"")
    assert request.hex() == "00034745540568747470730b6578616d706c652e636f6d012f", request.hex()
    suite = CipherSuite.new(KEMId.DHKEM_X25519_HKDF_SHA256, KDFId.HKDF_SHA256, AEADId.AES128_GCM)
    ske = suite.kem.deserialize_private_key(bytes.fromhex(v["skE"]))
    pke = suite.kem.deserialize_public_key(bytes.fromhex("4b28f881333e7c164ffc499ad9796f877f4e1051ee6d31bad19dec96c208b472"))
    eks = KEMKeyPair(ske, pke)
    encapsulated, context = encapsulate(request, key_id, public, 1, eks=eks)
    assert encapsulated.hex() == v["encRequest"], encapsulated.hex()
    status, headers, content = decode_response(decapsulate(bytes.fromhex(v["encResponse"]), context))
    assert (status, headers, content) == (200, [], b""), (status, headers, content)
    print("selftest ok: RFC 9458 Appendix A request and response, byte for byte")


def make_cert(directory, extra_ips=(), dns_names=()):
    key = ec.generate_private_key(ec.SECP256R1())
    name = x509.Name([x509.NameAttribute(NameOID.COMMON_NAME, "callveil-test")])
    now = datetime.datetime.now(datetime.timezone.utc)
    import ipaddress
    cert = (x509.CertificateBuilder().subject_name(name).issuer_name(name).public_key(key.public_key())
            .serial_number(x509.random_serial_number()).not_valid_before(now - datetime.timedelta(minutes=5))
            .not_valid_after(now + datetime.timedelta(days=2))
            .add_extension(x509.SubjectAlternativeName([x509.DNSName(n) for n in ("localhost", *dns_names)]
                                                       + [x509.IPAddress(ipaddress.ip_address(ip)) for ip in ("127.0.0.1", *extra_ips)]),
                           critical=False)
            .add_extension(x509.BasicConstraints(ca=True, path_length=None), critical=True)
            .sign(key, hashes.SHA256()))
    with open(os.path.join(directory, "cert.pem"), "wb") as f:
        f.write(cert.public_bytes(serialization.Encoding.PEM))
    with open(os.path.join(directory, "key.pem"), "wb") as f:
        f.write(key.private_bytes(serialization.Encoding.PEM, serialization.PrivateFormat.PKCS8, serialization.NoEncryption()))
    os.chmod(os.path.join(directory, "key.pem"), 0o600)


HOP = {"connection", "keep-alive", "proxy-connection", "transfer-encoding", "upgrade", "te", "host", "content-length"}


class Proxy:
    def __init__(self, args):
        self.args = args
        self.local = threading.local()
        self.lock = threading.Lock()
        self.counter = 0
        self.log = open(args.log, "a") if args.log else None
        self.configs = None

    def client(self):
        if not hasattr(self.local, "client"):
            verify = self.args.ca if self.args.ca else True
            self.local.client = httpx.Client(http1=not self.args.h2c, http2=True, verify=verify, timeout=60)
        return self.local.client

    def key_configs(self, refresh=False):
        with self.lock:
            if self.configs is None or refresh:
                r = self.client().get(self.args.keys)
                if r.status_code != 200 or r.headers.get("content-type") != "application/ohttp-keys":
                    raise RuntimeError(f"key configurations: {r.status_code} {r.headers.get('content-type')}")
                self.configs = parse_key_configs(r.content)
            return self.configs

    def send(self, method, authority, path, headers, body):
        with self.lock:
            self.counter += 1
            n = self.counter
        indeterminate = n % 2 == 0  # both Binary HTTP framings, alternately
        request = encode_request(method, "https", authority, path, headers, body, indeterminate)
        for attempt in (0, 1):
            key_id, public, suites = self.key_configs(refresh=attempt == 1)[0]
            offered = [aead for kdf, aead in suites if kdf == 1 and aead in AEADS]
            aead = offered[n % len(offered)]  # every offered suite, in turn
            encapsulated, context = encapsulate(request, key_id, public, aead)
            r = self.client().post(self.args.gateway, content=encapsulated, headers={"content-type": "message/ohttp-req"})
            if r.status_code == 400 and "ohttp-key" in r.text and attempt == 0:
                continue  # the gateway rotated its keys: fetch the configurations again
            break
        record = {"path": path, "gateway_status": r.status_code, "http_version": r.http_version,
                  "framing": "indeterminate" if indeterminate else "known", "aead": aead}
        if r.status_code in (429, 503):
            # The gateway shed the request before decapsulating it: passed on as it came, as a relay does.
            self.write(record)
            kept = [(k, v) for k, v in r.headers.items() if k.lower() in ("retry-after", "content-type")]
            return r.status_code, kept, r.content
        if r.status_code != 200 or r.headers.get("content-type") != "message/ohttp-res":
            self.write(record)
            return 502, [("content-type", "text/plain")], f"gateway answered {r.status_code}: {r.text}".encode()
        status, inner_headers, content = decode_response(decapsulate(r.content, context))
        record["status"] = status
        self.write(record)
        return status, inner_headers, content

    def write(self, record):
        if self.log:
            with self.lock:
                self.log.write(json.dumps(record) + "\n")
                self.log.flush()


def serve(args):
    # A parent that handles SIGTERM itself (a Swift service's signal handling) leaves it ignored in children.
    signal.signal(signal.SIGTERM, signal.SIG_DFL)
    proxy = Proxy(args)
    proxy.key_configs()

    class Handler(http.server.BaseHTTPRequestHandler):
        protocol_version = "HTTP/1.1"

        def log_message(self, *a):
            pass

        def handle_one(self):
            length = int(self.headers.get("content-length") or 0)
            body = self.rfile.read(length) if length else b""
            headers = [(k.lower(), v) for k, v in self.headers.items() if k.lower() not in HOP]
            authority = args.authority or self.headers.get("host", "")
            try:
                status, inner, content = proxy.send(self.command, authority, self.path, headers, body)
            except Exception as e:  # noqa: BLE001 - answered to the local client, which reports it
                status, inner, content = 502, [("content-type", "text/plain")], f"proxy: {e!r}".encode()
                proxy.write({"path": self.path, "proxy_error": repr(e)[:300]})
            self.send_response(status)
            for k, v in inner:
                if k.lower() not in HOP:
                    self.send_header(k, v)
            self.send_header("content-length", str(len(content)))
            self.end_headers()
            self.wfile.write(content)

        do_GET = do_POST = handle_one

    class Server(socketserver.ThreadingMixIn, http.server.HTTPServer):
        daemon_threads = True

    server = Server(("127.0.0.1", args.port), Handler)
    print(f"listening {server.server_address[1]}", flush=True)
    server.serve_forever()


def hold(args):
    import socket
    import ssl
    import time
    import h2.config
    import h2.connection
    import h2.events
    sock = socket.create_connection(("127.0.0.1", args.port))
    if args.tls:
        context = ssl.create_default_context(cafile=args.ca)
        context.set_alpn_protocols(["h2"])
        sock = context.wrap_socket(sock, server_hostname="127.0.0.1")
        assert sock.selected_alpn_protocol() == "h2", sock.selected_alpn_protocol()
    conn = h2.connection.H2Connection(config=h2.config.H2Configuration(client_side=True))
    conn.initiate_connection()
    conn.send_headers(1, [(":method", "GET"), (":path", args.path), (":scheme", "https" if args.tls else "http"),
                          (":authority", "127.0.0.1")], end_stream=True)
    sock.sendall(conn.data_to_send())
    status, ended = None, False
    while not ended:
        data = sock.recv(65536)
        if not data:
            break
        for event in conn.receive_data(data):
            if isinstance(event, h2.events.ResponseReceived):
                status = dict(event.headers).get(b":status", b"").decode()
            if isinstance(event, h2.events.StreamEnded):
                ended = True
        sock.sendall(conn.data_to_send())
    print(f"status {status}", flush=True)
    while True:
        time.sleep(3600)


def terminate(args):
    import asyncio
    import ssl
    context = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
    context.load_cert_chain(args.cert, args.key)
    context.set_alpn_protocols(args.alpn or ["http/1.1"])

    async def pipe(reader, writer):
        try:
            while data := await reader.read(65536):
                writer.write(data)
                await writer.drain()
        except (ConnectionError, ssl.SSLError):
            pass
        finally:
            writer.close()

    async def handle(reader, writer):
        try:
            target_reader, target_writer = await asyncio.open_connection("127.0.0.1", args.target)
        except OSError:
            writer.close()
            return
        await asyncio.gather(pipe(reader, target_writer), pipe(target_reader, writer))

    async def run():
        host, port = args.listen.rsplit(":", 1)
        server = await asyncio.start_server(handle, host, int(port), ssl=context)
        print("listening", server.sockets[0].getsockname()[1], flush=True)
        async with server:
            await server.serve_forever()

    asyncio.run(run())


def dns_server(args):
    import socket
    records = {}
    for entry in args.txt:
        name, text = entry.split("=", 1)
        records.setdefault(name.lower().rstrip("."), []).append(text.encode())
    sock = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
    sock.bind(("127.0.0.1", args.port))
    print("listening", sock.getsockname()[1], flush=True)
    while True:
        query, peer = sock.recvfrom(4096)
        if len(query) < 12:
            continue
        at, labels = 12, []
        while at < len(query) and query[at] != 0:
            labels.append(query[at + 1:at + 1 + query[at]].decode(errors="replace"))
            at += 1 + query[at]
        question = query[12:at + 5]
        qtype = int.from_bytes(query[at + 1:at + 3], "big")
        texts = records.get(".".join(labels).lower())
        answers = b""
        if texts is not None and qtype == 16:
            for text in texts:
                rdata = bytes([len(text)]) + text
                answers += b"\xc0\x0c" + (16).to_bytes(2, "big") + (1).to_bytes(2, "big") + (60).to_bytes(4, "big") \
                    + len(rdata).to_bytes(2, "big") + rdata
        flags = 0x8180 if texts is not None else 0x8183
        count = len(texts) if texts is not None and qtype == 16 else 0
        header = query[:2] + flags.to_bytes(2, "big") + (1).to_bytes(2, "big") + count.to_bytes(2, "big") + bytes(4)
        sock.sendto(header + question + answers, peer)


def main():
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    sub = parser.add_subparsers(dest="command", required=True)
    sub.add_parser("selftest")
    cert = sub.add_parser("make-cert")
    cert.add_argument("directory")
    cert.add_argument("ips", nargs="*")
    cert.add_argument("--dns", action="append", default=[])
    t = sub.add_parser("terminate")
    t.add_argument("--listen", required=True)
    t.add_argument("--target", type=int, required=True)
    t.add_argument("--cert", required=True)
    t.add_argument("--key", required=True)
    t.add_argument("--alpn", action="append")
    d = sub.add_parser("dns")
    d.add_argument("--txt", action="append", default=[])
    d.add_argument("--port", type=int, default=0)
    p = sub.add_parser("proxy")
    p.add_argument("--gateway", required=True)
    p.add_argument("--keys", required=True)
    p.add_argument("--ca")
    p.add_argument("--h2c", action="store_true", help="HTTP/2 with prior knowledge over plain TCP")
    p.add_argument("--port", type=int, default=0)
    p.add_argument("--log")
    p.add_argument("--authority")
    h = sub.add_parser("hold")
    h.add_argument("--port", type=int, required=True)
    h.add_argument("--path", required=True)
    h.add_argument("--tls", action="store_true")
    h.add_argument("--ca")
    args = parser.parse_args()
    if args.command == "hold":
        hold(args)
    elif args.command == "selftest":
        selftest()
    elif args.command == "make-cert":
        make_cert(args.directory, args.ips, args.dns)
    elif args.command == "terminate":
        terminate(args)
    elif args.command == "dns":
        dns_server(args)
    else:
        serve(args)


if __name__ == "__main__":
    sys.exit(main())
