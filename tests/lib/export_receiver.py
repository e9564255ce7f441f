#!/usr/bin/env python3
# SPDX-License-Identifier: Apache-2.0
"""A profile store double for the export tests: listens on 127.0.0.1 only and records every
request into DIR as NNNN.json (method, path, query, headers, arrival time) and NNNN.body; the
profile it carries is also written out: NNNN.otlp.pb (OTLP, the body as is), NNNN.pprof (the
multipart field "profile" of a Pyroscope /ingest, or the base64 rawProfile of a Parca
/profiles/writeraw JSON). Answers 200. Usage: export_receiver.py DIR PORT [CERT KEY [CLIENT_CA]] (PORT 0: any; the
port taken is written to DIR/port; with CERT and KEY it speaks TLS, and with CLIENT_CA it asks
for a client certificate signed by that CA and refuses the handshake without one)."""
import base64
import http.server
import json
import os
import ssl
import sys
import threading
import time
import urllib.parse

out = sys.argv[1]
lock = threading.Lock()
count = [len([f for f in os.listdir(out) if f.endswith(".json")])]


def multipart_part(body, ctype, name):
    b = [p.split("=", 1)[1].strip('"') for p in ctype.split(";") if p.strip().startswith("boundary=")]
    if not b:
        return None
    for part in body.split(b"--" + b[0].encode()):
        head, _, data = part.partition(b"\r\n\r\n")
        if ('name="%s"' % name).encode() in head:
            return data[:-2] if data.endswith(b"\r\n") else data
    return None


class Handler(http.server.BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"

    def do_POST(self):
        n = int(self.headers.get("Content-Length", "0"))
        body = self.rfile.read(n)
        u = urllib.parse.urlsplit(self.path)
        meta = {"method": "POST", "path": u.path, "query": urllib.parse.parse_qs(u.query),
                "headers": {k.lower(): v for k, v in self.headers.items()},
                "arrival": time.time()}
        with lock:
            i = count[0]
            count[0] += 1
        base = os.path.join(out, "%04d" % i)
        with open(base + ".body", "wb") as f:
            f.write(body)
        ctype = self.headers.get("Content-Type", "")
        prof, ext = None, None
        if u.path.endswith("/profiles/writeraw"):
            j = json.loads(body)
            meta["labels"] = j["series"][0]["labels"]["labels"]
            prof, ext = base64.b64decode(j["series"][0]["samples"][0]["rawProfile"]), ".pprof"
        elif u.path.endswith("/ingest"):
            prof, ext = multipart_part(body, ctype, "profile"), ".pprof"
        elif "protobuf" in ctype:
            prof, ext = body, ".otlp.pb"
        if prof is not None:
            with open(base + ext, "wb") as f:
                f.write(prof)
        # The .json last: a reader that sees it sees the rest.
        with open(base + ".tmp", "w") as f:
            json.dump(meta, f)
        os.rename(base + ".tmp", base + ".json")
        self.send_response(200)
        self.send_header("Content-Length", "0")
        self.end_headers()

    def log_message(self, *args):
        pass


srv = http.server.ThreadingHTTPServer(("127.0.0.1", int(sys.argv[2])), Handler)
if len(sys.argv) > 4:
    ctx = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
    ctx.load_cert_chain(sys.argv[3], sys.argv[4])
    if len(sys.argv) > 5:
        ctx.verify_mode = ssl.CERT_REQUIRED
        ctx.load_verify_locations(sys.argv[5])
    srv.socket = ctx.wrap_socket(srv.socket, server_side=True)
with open(os.path.join(out, "port.tmp"), "w") as f:
    f.write(str(srv.server_address[1]))
os.rename(os.path.join(out, "port.tmp"), os.path.join(out, "port"))
srv.serve_forever()
