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

DELAY_MS = 250        # per generated token
# Tokens of a request that holds the slot: 50 s at DELAY_MS, for the checks made meanwhile
# (0.1 s here) to fit on a machine hundreds of times slower. Each holder hangs up once its
# answer has begun, so a passing run waits out none of it, only a few tokens' DELAY_MS: the
# short answers' and those that pass before the server notices a hang-up.
LONG = 200
PATIENCE = 120        # seconds: a bound on waits that end at once unless something hangs
CHAT = "/v1/chat/completions"
HELLO = [{"role": "user", "content": "Hello"}]


def request(port, method, path, body=None, timeout=PATIENCE):
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


def wait_for(what, condition, seconds=PATIENCE):
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
    holder = http.client.HTTPConnection("127.0.0.1", port, timeout=PATIENCE)
    holder.request("POST", CHAT, json.dumps({"messages": HELLO, "stream": True,
                                             "temperature": 0, "max_tokens": LONG}))
    r = holder.getresponse()
    assert r.status == 200, r.read()
    assert r.readline().startswith(b"data: "), "no first event"
    # B waits in the queue (its answer is read later).
    queued = http.client.HTTPConnection("127.0.0.1", port, timeout=PATIENCE)
    queued.request("POST", "/v1/completions", json.dumps({"prompt": "Hello", "max_tokens": 2,
                                                         "temperature": 0}))
    wait_for("B in the queue", lambda: metrics(port)["kestrel_requests_deferred"] == 1)
    # C finds the slot busy and the queue full: refused at once, not once the slot is free, so A
    # still generates and B still waits after the 503 (no clock: a slow machine takes seconds).
    s, headers, b = request(port, "POST", CHAT, json.dumps({"messages": HELLO, "max_tokens": 2}))
    error = check_error(s, b, 503, code="server_busy")
    assert error["type"] == "server_error", error
    assert headers.get("Retry-After") == "1", headers
    m = metrics(port)
    assert m["kestrel_requests_rejected_busy_total"] == 1, m
    assert m["kestrel_requests_processing"] == 1 and m["kestrel_slots_busy_ratio"] == 1, m
    assert m["kestrel_requests_deferred"] == 1, m
    # The official client sees the 503 and its Retry-After too.
    client = openai.OpenAI(base_url=f"http://127.0.0.1:{port}/v1", api_key="x", max_retries=0,
                           timeout=PATIENCE)
    try:
        client.chat.completions.create(model=model_id, messages=HELLO, max_tokens=2)
        raise AssertionError("a request past the queue was accepted")
    except openai.InternalServerError as e:
        assert e.status_code == 503 and e.body["code"] == "server_busy", e.body
        assert e.response.headers["retry-after"] == "1", e.response.headers
    assert metrics(port)["kestrel_requests_rejected_busy_total"] == 2

    # A hangs up after its first event, long before its generation would end: B is served once
    # A stops, short of its LONG tokens (a generation's tokens are counted as it ends, A's before
    # B's answer).
    hang_up(holder)
    r = queued.getresponse()
    answer = json.loads(r.read())
    queued.close()
    assert r.status == 200 and answer["usage"]["completion_tokens"] == 2, answer
    m = metrics(port)
    assert m["kestrel_clients_gone_total"] == 1, m
    tokens_so_far = m["kestrel_tokens_predicted_total"]
    a_tokens = tokens_so_far - answer["usage"]["completion_tokens"]
    assert a_tokens < LONG, f"A generated all {a_tokens:.0f} tokens: its hang-up did not stop it"

    # A non-streaming request hangs up once its answer has begun (a space every half second
    # tells it from a client that waits): it stops short of its LONG tokens too, and the next
    # request is served.
    waiting = http.client.HTTPConnection("127.0.0.1", port, timeout=PATIENCE)
    waiting.request("POST", CHAT, json.dumps({"messages": HELLO, "temperature": 0,
                                              "max_tokens": LONG}))
    r = waiting.getresponse()
    assert r.status == 200, r.read()
    hang_up(waiting)
    reply = client.chat.completions.create(model=model_id, messages=HELLO, max_tokens=3)
    assert reply.usage.completion_tokens <= 3 and reply.choices[0].message.content is not None
    client.close()
    m = metrics(port)
    waiting_tokens = (m["kestrel_tokens_predicted_total"] - tokens_so_far -
                      reply.usage.completion_tokens)
    assert waiting_tokens < LONG, f"the request that hung up generated all {waiting_tokens:.0f}"
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
        _, err = proc.communicate(timeout=PATIENCE)
        assert proc.returncode == 0 and b"server stopped" in err, err.decode()
    finally:
        if proc.poll() is None:
            proc.kill()
        if os.path.exists(gate):
            os.unlink(gate)
    print(f"server queue checks passed in {time.time() - started:.1f} s")


if __name__ == "__main__":
    main()
