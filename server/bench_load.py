"""Load on `kestrel serve` (issue 32's acceptance): N concurrent clients for a while, streaming
and not, some dropping the connection mid-stream; reports time to first token (p50, p99),
tokens/s per client, the 503s (the documented answer past the queue) and any other failure,
and the server's resident memory after a warm-up and after the run (it must stay within
2 MiB). A benchmark, not a timed test: run it by hand against a running server.

    kestrel serve model.kes --parallel 4 --port 8080 &
    python server/bench_load.py --url http://127.0.0.1:8080 --pid $! --clients 64 --seconds 120

Only the standard library: it runs on a board's Python too.
"""
import argparse
import http.client
import json
import random
import statistics
import threading
import time
import urllib.parse


def rss_bytes(pid):
    with open(f"/proc/{pid}/status") as f:
        for line in f:
            if line.startswith("VmRSS:"):
                return int(line.split()[1]) * 1024
    raise RuntimeError("no VmRSS")


class Stats:
    def __init__(self):
        self.lock = threading.Lock()
        self.ttft = []          # seconds to the first content chunk (streaming)
        self.rates = []         # tokens/s of each completed request, after its first token
        self.ok = self.busy = self.dropped = 0
        self.failures = []

    def add(self, **kw):
        with self.lock:
            for k, v in kw.items():
                if k in ("ttft", "rate"):
                    (self.ttft if k == "ttft" else self.rates).append(v)
                elif k == "failure":
                    self.failures.append(v)
                else:
                    setattr(self, k, getattr(self, k) + v)


def one_request(host, port, model, args, rng, stats):
    stream = rng.random() < 0.5
    drop = stream and rng.random() < args.drop_fraction
    body = {"model": model, "max_tokens": args.max_tokens, "stream": stream,
            "messages": [{"role": "user", "content": f"Tell me about kestrels, {rng.random()}"}]}
    if args.api_key:
        headers = {"Authorization": f"Bearer {args.api_key}"}
    else:
        headers = {}
    headers["Content-Type"] = "application/json"
    conn = http.client.HTTPConnection(host, port, timeout=args.timeout)
    start = time.time()
    try:
        conn.request("POST", "/v1/chat/completions", json.dumps(body), headers)
        r = conn.getresponse()
        if r.status == 503:
            r.read()
            stats.add(busy=1)
            time.sleep(float(r.getheader("Retry-After", "1")) * rng.random())
            return
        if r.status != 200:
            stats.add(failure=f"HTTP {r.status}: {r.read()[:200]!r}")
            return
        if not stream:
            answer = json.loads(r.read())
            tokens = answer["usage"]["completion_tokens"]
            elapsed = time.time() - start
            stats.add(ok=1, rate=tokens / elapsed if elapsed > 0 else 0)
            return
        first = None
        tokens = 0
        done = False
        for raw in r:
            line = raw.decode().strip()
            if not line.startswith("data: "):
                continue
            if line == "data: [DONE]":
                done = True
                break
            chunk = json.loads(line[6:])
            if "error" in chunk:
                stats.add(failure=f"stream error: {chunk['error']}")
                return
            if chunk["choices"] and chunk["choices"][0]["delta"].get("content"):
                tokens += 1
                if first is None:
                    first = time.time()
                    stats.add(ttft=first - start)
                    if drop:
                        conn.sock.close()  # gone mid-stream: the server must free the slot
                        stats.add(dropped=1)
                        return
        if not done:
            stats.add(failure="stream ended without data: [DONE]")
            return
        if first is not None and tokens > 1:
            stats.add(rate=(tokens - 1) / max(time.time() - first, 1e-9))
        stats.add(ok=1)
    except (OSError, http.client.HTTPException, ValueError) as e:
        stats.add(failure=f"{type(e).__name__}: {e}")
    finally:
        conn.close()


def run(host, port, model, args, seconds, stats):
    stop = time.time() + seconds

    def client(seed):
        rng = random.Random(seed)
        while time.time() < stop:
            one_request(host, port, model, args, rng, stats)

    threads = [threading.Thread(target=client, args=(i,)) for i in range(args.clients)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()


def percentile(values, p):
    if not values:
        return float("nan")
    values = sorted(values)
    return values[min(len(values) - 1, int(p / 100 * len(values)))]


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--url", default="http://127.0.0.1:8080")
    ap.add_argument("--pid", type=int, help="the server's process id, for its resident memory")
    ap.add_argument("--clients", type=int, default=64)
    ap.add_argument("--seconds", type=float, default=120)
    ap.add_argument("--warmup-seconds", type=float, default=10)
    ap.add_argument("--max-tokens", type=int, default=64)
    ap.add_argument("--drop-fraction", type=float, default=0.2,
                    help="of the streaming requests, those that hang up after the first token")
    ap.add_argument("--timeout", type=float, default=300)
    ap.add_argument("--api-key")
    args = ap.parse_args()
    url = urllib.parse.urlparse(args.url)
    host, port = url.hostname, url.port or 80
    conn = http.client.HTTPConnection(host, port, timeout=30)
    headers = {"Authorization": f"Bearer {args.api_key}"} if args.api_key else {}
    conn.request("GET", "/v1/models", headers=headers)
    model = json.loads(conn.getresponse().read())["data"][0]["id"]
    conn.close()

    run(host, port, model, args, args.warmup_seconds, Stats())
    rss_warm = rss_bytes(args.pid) if args.pid else None
    stats = Stats()
    started = time.time()
    run(host, port, model, args, args.seconds, stats)
    elapsed = time.time() - started
    time.sleep(2)  # let the slots of dropped clients come free
    rss_after = rss_bytes(args.pid) if args.pid else None

    print(f"{args.clients} clients for {elapsed:.0f} s: {stats.ok} answered, {stats.busy} 503 "
          f"(queue full), {stats.dropped} dropped mid-stream, {len(stats.failures)} failed")
    print(f"time to first token: p50 {percentile(stats.ttft, 50) * 1000:.0f} ms, "
          f"p99 {percentile(stats.ttft, 99) * 1000:.0f} ms")
    if stats.rates:
        print(f"tokens/s per client: p50 {statistics.median(stats.rates):.1f}, "
              f"p10 {percentile(stats.rates, 10):.1f}")
    failed = bool(stats.failures)
    for f in stats.failures[:10]:
        print("  failure:", f)
    if rss_warm is not None:
        growth = rss_after - rss_warm
        print(f"resident memory: {rss_warm / 2**20:.1f} MiB after the warm-up, "
              f"{rss_after / 2**20:.1f} MiB after the run ({growth / 2**20:+.2f} MiB)")
        if growth > 2 * 2**20:
            print("  more than 2 MiB of growth")
            failed = True
    raise SystemExit(1 if failed else 0)


if __name__ == "__main__":
    main()
