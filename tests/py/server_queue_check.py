"""`kestrel serve` while loading, when busy, and when clients hang up (tests/server_openai_test.cc).

One server, --parallel 1 --queue 1 --metrics, started with two test-only environment variables
that only the server reads (server/server.cc): KESTREL_SERVE_TEST_LOAD_GATE holds the loading
until the file it names exists, and KESTREL_SERVE_TEST_TOKEN_DELAY_MS paces generation, so that
a request holds its slot for as long as the test needs without a race. Checks:
- while loading, /health answers 503 {"status": "loading"} with Retry-After, and every other
  endpoint 503 with the error code "loading"; once loaded, /health answers 200;
- with the slot generating and one request queued, the next is refused at once with 503,
  Retry-After and the JSON error "server_busy", counted in kestrel_requests_rejected_busy_total,
  while the server goes on serving;
- a client that hangs up mid-answer (streaming or not) stops its generation long before it
  would have ended: the queued request, then the next one, are served promptly, and
  kestrel_clients_gone_total counts each.
Exits 0 when every check passed; prints what failed otherwise.
"""
import argparse
import http.client
import json
import os
import signal
import socket
import subprocess
import sys
import time

import openai

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from server_openai_check import check_error  # noqa: E402

DELAY_MS = 40         # per generated token
LONG = 200            # tokens of a request that holds the slot: 8 s at DELAY_MS
CHAT = "/v1/chat/completions"
HELLO = [{"role": "user", "content": "Hello"}]


def request(port, method, path, body=None, timeout=30):
    conn = http.client.HTTPConnection("127.0.0.1", port, timeout=timeout)
    try:
        conn.request(method, path, body=body)
        r = conn.getresponse()
        return r.status, dict(r.getheaders()), r.read()
    finally:
        conn.close()


def metrics(port):
    status, _, body = request(port, "GET", "/metrics")
    assert status == 200, body
    return {k: float(v) for k, v in (line.split() for line in body.decode().splitlines()
                                     if not line.startswith("#"))}


def wait_for(what, condition, seconds=20):
    """Polls `condition` (no fixed sleep decides anything): fails after `seconds`."""
    deadline = time.time() + seconds
    while not condition():
        assert time.time() < deadline, f"gave up waiting for {what}"
        time.sleep(0.01)


def hang_up(conn):
    conn.sock.shutdown(socket.SHUT_RDWR)
    conn.close()


def check_loading(port, gate):
    s, headers, b = request(port, "GET", "/health")
    assert s == 503 and json.loads(b) == {"status": "loading"}, (s, b)
    assert headers.get("Retry-After") == "1", headers
    for method, path, body in (("GET", "/v1/models", None), ("GET", "/metrics", None),
                               ("POST", CHAT, json.dumps({"messages": HELLO})),
                               ("POST", "/tokenize", json.dumps({"content": "Hi"}))):
        s, headers, b = request(port, method, path, body)
        check_error(s, b, 503, code="loading")
        assert headers.get("Retry-After") == "1", (path, headers)
    open(gate, "w").close()
    wait_for("/health 200", lambda: request(port, "GET", "/health")[0] == 200)


def check_busy_and_hang_ups(port, model_id):
    # A holds the slot: its answer has begun (the slot is taken before the first byte is sent).
    holder = http.client.HTTPConnection("127.0.0.1", port, timeout=30)
    holder.request("POST", CHAT, json.dumps({"messages": HELLO, "stream": True,
                                             "temperature": 0, "max_tokens": LONG}))
    r = holder.getresponse()
    assert r.status == 200, r.read()
    assert r.readline().startswith(b"data: "), "no first event"
    # B waits in the queue (its answer is read later).
    queued = http.client.HTTPConnection("127.0.0.1", port, timeout=30)
    queued.request("POST", "/v1/completions", json.dumps({"prompt": "Hello", "max_tokens": 2,
                                                         "temperature": 0}))
    wait_for("B in the queue", lambda: metrics(port)["kestrel_requests_deferred"] == 1)
    # C finds the slot busy and the queue full: refused at once.
    t = time.time()
    s, headers, b = request(port, "POST", CHAT, json.dumps({"messages": HELLO, "max_tokens": 2}))
    error = check_error(s, b, 503, code="server_busy")
    assert error["type"] == "server_error", error
    assert headers.get("Retry-After") == "1", headers
    assert time.time() - t < 5, f"the 503 took {time.time() - t:.1f} s"
    m = metrics(port)
    assert m["kestrel_requests_rejected_busy_total"] == 1, m
    assert m["kestrel_requests_processing"] == 1 and m["kestrel_slots_busy_ratio"] == 1, m
    # The official client sees the 503 and its Retry-After too.
    client = openai.OpenAI(base_url=f"http://127.0.0.1:{port}/v1", api_key="x", max_retries=0,
                           timeout=30)
    try:
        client.chat.completions.create(model=model_id, messages=HELLO, max_tokens=2)
        raise AssertionError("a request past the queue was accepted")
    except openai.InternalServerError as e:
        assert e.status_code == 503 and e.body["code"] == "server_busy", e.body
        assert e.response.headers["retry-after"] == "1", e.response.headers
    assert metrics(port)["kestrel_requests_rejected_busy_total"] == 2

    # A hangs up after its first event, LONG * DELAY_MS before its generation would end: B is
    # served at once.
    t = time.time()
    hang_up(holder)
    r = queued.getresponse()
    answer = json.loads(r.read())
    queued.close()
    assert r.status == 200 and answer["usage"]["completion_tokens"] == 2, answer
    waited = time.time() - t
    assert waited < LONG * DELAY_MS / 1000 / 2, f"B waited {waited:.1f} s after A hung up"
    m = metrics(port)
    assert m["kestrel_clients_gone_total"] == 1, m

    # A non-streaming request hangs up once its answer has begun (a space every half second
    # tells it from a client that waits): the next request is served promptly too.
    waiting = http.client.HTTPConnection("127.0.0.1", port, timeout=30)
    waiting.request("POST", CHAT, json.dumps({"messages": HELLO, "temperature": 0,
                                              "max_tokens": LONG}))
    r = waiting.getresponse()
    assert r.status == 200, r.read()
    t = time.time()
    hang_up(waiting)
    reply = client.chat.completions.create(model=model_id, messages=HELLO, max_tokens=3)
    waited = time.time() - t
    assert reply.usage.completion_tokens <= 3 and reply.choices[0].message.content is not None
    assert waited < LONG * DELAY_MS / 1000 / 2, f"waited {waited:.1f} s after the hang-up"
    client.close()
    m = metrics(port)
    assert m["kestrel_clients_gone_total"] == 2, m
    assert m["kestrel_requests_rejected_busy_total"] == 2, m
    assert m["kestrel_requests_processing"] == 0 and m["kestrel_requests_deferred"] == 0, m


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--kestrel", required=True)
    parser.add_argument("--model", required=True)
    parser.add_argument("--template", default="gemma")
    parser.add_argument("--tmp", default="/tmp", help="a folder for the loading gate file")
    a = parser.parse_args()
    model_id = os.path.basename(a.model)[:-len(".kes")]
    started = time.time()
    gate = os.path.join(a.tmp, f"server-load-gate-{os.getpid()}")
    env = dict(os.environ, KESTREL_SERVE_TEST_LOAD_GATE=gate,
               KESTREL_SERVE_TEST_TOKEN_DELAY_MS=str(DELAY_MS))
    proc = subprocess.Popen(
        [a.kestrel, "serve", a.model, "--port", "0", "--ctx", "256", "--threads", "1",
         "--parallel", "1", "--queue", "1", "--metrics", "--template", a.template],
        stdout=subprocess.PIPE, stderr=subprocess.PIPE, env=env)
    try:
        line = proc.stdout.readline().decode()
        assert "listening on http://" in line, line + proc.stderr.read().decode()
        port = int(line.split("listening on http://")[1].split()[0].rsplit(":", 1)[1])
        check_loading(port, gate)
        check_busy_and_hang_ups(port, model_id)
        proc.send_signal(signal.SIGTERM)
        _, err = proc.communicate(timeout=20)
        assert proc.returncode == 0 and b"server stopped" in err, err.decode()
    finally:
        if proc.poll() is None:
            proc.kill()
        if os.path.exists(gate):
            os.unlink(gate)
    print(f"server queue checks passed in {time.time() - started:.1f} s")


if __name__ == "__main__":
    main()
