#!/usr/bin/env python3
# SPDX-License-Identifier: GPL-2.0-only
"""A loopback OTLP/HTTP profiles receiver for ember's tests.

    receiver.py --port-file F --dir D [--mode MODE] [--retry-after S]
                [--delay S] [--fail-first N]

Listens on 127.0.0.1 (an ephemeral port, written to --port-file once
listening). Every POST is recorded in D as NNNN.json (method, path,
headers, body sizes, status answered) and, when answered 2xx, NNNN.bin
holding the body decompressed. Modes:

  ok       200 with an empty ExportProfilesServiceResponse
  503      503 Service Unavailable with Retry-After (--retry-after)
  429      429 Too Many Requests with Retry-After
  slow     sleep --delay seconds, then 200
  400      400 Bad Request (permanent: the client must drop)
  partial  200 with partial_success {rejected_profiles: 1, error_message}

--fail-first N answers the mode for the first N requests and 200 after,
so a test sees a receiver that recovers. The mode can be changed while
running by writing it to D/mode (read at each request). --tls-cert and
--tls-key serve https instead of http.
"""
import argparse
import gzip
import json
import os
import sys
import threading
import time
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

MAX_BODY = 64 << 20


def varint(n):
    out = bytearray()
    while True:
        b = n & 0x7F
        n >>= 7
        if n:
            out.append(b | 0x80)
        else:
            out.append(b)
            return bytes(out)


def partial_success_body(rejected, message):
    # ExportProfilesServiceResponse{partial_success(1){rejected_profiles(1), error_message(2)}}
    msg = message.encode()
    inner = b"\x08" + varint(rejected) + b"\x12" + varint(len(msg)) + msg
    return b"\x0a" + varint(len(inner)) + inner


class State:
    def __init__(self, args):
        self.args = args
        self.lock = threading.Lock()
        self.seq = 0


def make_handler(state):
    class Handler(BaseHTTPRequestHandler):
        protocol_version = "HTTP/1.1"

        def log_message(self, fmt, *a):  # quiet: tests read the files
            pass

        def mode(self):
            path = os.path.join(state.args.dir, "mode")
            try:
                with open(path) as f:
                    return f.read().strip() or state.args.mode
            except OSError:
                return state.args.mode

        def do_POST(self):
            length = int(self.headers.get("Content-Length") or 0)
            body = self.rfile.read(min(length, MAX_BODY)) if length else b""
            with state.lock:
                seq = state.seq
                state.seq += 1
            mode = self.mode()
            if state.args.fail_first is not None and seq >= state.args.fail_first:
                mode = "ok"
            status, extra, resp = 200, {}, b""
            if mode == "503":
                status, extra = 503, {"Retry-After": str(state.args.retry_after)}
            elif mode == "429":
                status, extra = 429, {"Retry-After": str(state.args.retry_after)}
            elif mode == "400":
                status, resp = 400, b"bad request (test receiver)"
            elif mode == "slow":
                time.sleep(state.args.delay)
            elif mode == "partial":
                resp = partial_success_body(1, "test receiver rejected one profile")
            plain = body
            decode_error = None
            if self.headers.get("Content-Encoding", "") == "gzip":
                try:
                    plain = gzip.decompress(body)
                except Exception as e:  # recorded, checked by the test
                    decode_error = str(e)
            rec = {
                "seq": seq,
                "method": "POST",
                "path": self.path,
                "headers": {k.lower(): v for k, v in self.headers.items()},
                "body_len": len(body),
                "plain_len": len(plain),
                "decode_error": decode_error,
                "status": status,
                "mode": mode,
                "time": time.time(),
            }
            base = os.path.join(state.args.dir, "%04d" % seq)
            if 200 <= status < 300:
                with open(base + ".bin.tmp", "wb") as f:
                    f.write(plain)
                os.rename(base + ".bin.tmp", base + ".bin")
            with open(base + ".json.tmp", "w") as f:
                json.dump(rec, f)
            os.rename(base + ".json.tmp", base + ".json")
            try:
                self.send_response(status)
                for k, v in extra.items():
                    self.send_header(k, v)
                ctype = "application/x-protobuf" if status == 200 else "text/plain"
                self.send_header("Content-Type", ctype)
                self.send_header("Content-Length", str(len(resp)))
                self.end_headers()
                self.wfile.write(resp)
            except OSError:
                pass  # the client gave up (slow mode): nothing to answer

    return Handler


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--port-file", required=True)
    ap.add_argument("--port", type=int, default=0)
    ap.add_argument("--dir", required=True)
    ap.add_argument("--mode", default="ok")
    ap.add_argument("--retry-after", type=int, default=1)
    ap.add_argument("--delay", type=float, default=3.0)
    ap.add_argument("--fail-first", type=int, default=None)
    ap.add_argument("--tls-cert", help="serve https with this certificate (PEM)")
    ap.add_argument("--tls-key", help="its private key (PEM)")
    ap.add_argument("--lifetime", type=float, default=300.0,
                    help="exit after this many seconds (no stray servers)")
    args = ap.parse_args()
    os.makedirs(args.dir, exist_ok=True)
    srv = ThreadingHTTPServer(("127.0.0.1", args.port), make_handler(State(args)))
    srv.daemon_threads = True
    if args.tls_cert:
        import ssl
        ctx = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
        ctx.load_cert_chain(args.tls_cert, args.tls_key)
        srv.socket = ctx.wrap_socket(srv.socket, server_side=True)
    tmp = args.port_file + ".tmp"
    with open(tmp, "w") as f:
        f.write(str(srv.server_address[1]))
    os.rename(tmp, args.port_file)
    t = threading.Timer(args.lifetime, srv.shutdown)
    t.daemon = True
    t.start()
    srv.serve_forever()
    return 0


if __name__ == "__main__":
    sys.exit(main())
