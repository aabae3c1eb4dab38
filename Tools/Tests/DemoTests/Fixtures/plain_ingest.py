#!/usr/bin/env python3
"""A plain ingest that speaks the contracts and nothing else (test DM5).

It has none of this repository's collector API: every GET answers 404, so `demo --collector`
must run without `/api/requests`. Each POST is answered as the real services answer it, and its
route and body are appended, one JSON line per request, to the file given as the first argument
(the test reads Score event ids from it). It prints `listening on http://127.0.0.1:PORT` and
serves until killed.
"""
import json
import sys
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

LOG = sys.argv[1]
OUTCOME = {"outcome": "accepted"}
ANSWERS = {
    "/functions/v1/onboarding-response": OUTCOME,
    "/functions/v1/paywall-presentations": OUTCOME,
    "/v1/onboarding-runs": OUTCOME,
    "/v1/paywall-presentations": OUTCOME,
    "/functions/v1/demand-score": {"demandScore": 50, "coldStart": True},
}


class Handler(BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"

    def answer(self, status, body):
        data = json.dumps(body).encode()
        self.send_response(status)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(data)))
        self.end_headers()
        self.wfile.write(data)

    def do_GET(self):
        self.answer(404, {"error": "not found"})

    def do_POST(self):
        length = int(self.headers.get("Content-Length") or 0)
        body = self.rfile.read(length).decode("utf-8", "replace")
        path = self.path.split("?")[0]
        with open(LOG, "a", encoding="utf-8") as f:
            f.write(json.dumps({"path": path, "body": body}) + "\n")
        self.answer(200, ANSWERS.get(path, {}))

    def log_message(self, *args):
        pass


server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
print(f"listening on http://127.0.0.1:{server.server_address[1]}", flush=True)
server.serve_forever()
