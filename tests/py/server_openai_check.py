"""`kestrel serve` against the official OpenAI Python client (tests/server_openai_test.cc).

Starts the server on a free port with the given model, then checks: /health and /v1/models;
chat and completions, streaming and not, greedy output equal to `kestrel chat --temp 0` and
`kestrel run --temp 0` on the same input; stop sequences, seeds, usage; /tokenize and
/detokenize; bad requests (malformed JSON, wrong types, unknown model, empty messages, a prompt
longer than the context, a body over the limit, invalid UTF-8), each answered with a 4xx JSON
error while the server keeps serving; --api-key and --metrics on a second server; and that
SIGTERM stops both cleanly. Exits 0 when every check passed; prints what failed otherwise.
"""
import argparse
import base64
import http.client
import json
import math
import os
import select
import signal
import socket
import subprocess
import sys
import time

import openai

THREADS = "1"  # the same threads for the server and the CLI: greedy runs are then identical
CTX = "256"
# The deadlines and timeouts below only ever end a hang, so they are generous: a slow, loaded CI
# machine runs some tests 25 to 200 times slower than a local build does.
STARTUP_SECONDS = 120


class Server:
    def __init__(self, kestrel, model, extra):
        self.proc = subprocess.Popen(
            [kestrel, "serve", model, "--port", "0", "--ctx", CTX, "--threads", THREADS] + extra,
            stdout=subprocess.PIPE, stderr=subprocess.PIPE)
        self.port = None
        self.banner = []
        self.unread = b""  # stdout read past the last line taken
        deadline = time.time() + STARTUP_SECONDS
        while True:
            line = self.read_line(deadline)
            if not line:
                break
            self.banner.append(line)
            if "listening on http://" in line:
                self.port = int(line.split("listening on http://")[1].split()[0].rsplit(":", 1)[1])
                break
        if self.port is None:
            self.proc.kill()
            raise SystemExit("the server did not start: " + "".join(self.banner) +
                             self.proc.stderr.read().decode())
        while time.time() < deadline:
            status, _, _ = self.request("GET", "/health")
            if status == 200:
                break
            assert status == 503, f"/health while loading: expected 503, got {status}"
            time.sleep(0.02)
        else:
            self.proc.kill()
            raise SystemExit("the server did not become ready")
        while not self.banner[-1].startswith("kestrel: ready"):
            line = self.read_line(deadline)
            if not line:
                self.proc.kill()
                raise SystemExit("the server did not say it was ready: " + "".join(self.banner))
            self.banner.append(line)

    def read_line(self, deadline):
        """The server's next line on stdout, or "" at its end or at `deadline`, which a blocking
        readline could wait past."""
        fd = self.proc.stdout.fileno()
        while b"\n" not in self.unread:
            left = deadline - time.time()
            if left <= 0 or not select.select([fd], [], [], left)[0]:
                return ""
            chunk = os.read(fd, 4096)
            if not chunk:
                break
            self.unread += chunk
        line, newline, self.unread = self.unread.partition(b"\n")
        return (line + newline).decode()

    def request(self, method, path, body=None, headers=None, timeout=150):
        conn = http.client.HTTPConnection("127.0.0.1", self.port, timeout=timeout)
        try:
            conn.request(method, path, body=body, headers=headers or {})
            r = conn.getresponse()
            return r.status, dict(r.getheaders()), r.read()
        finally:
            conn.close()

    def stop(self):
        t = time.time()
        self.proc.send_signal(signal.SIGTERM)
        try:
            _, err = self.proc.communicate(timeout=100)
        except subprocess.TimeoutExpired:
            self.proc.kill()
            raise AssertionError("the server did not stop on SIGTERM within 100 s")
        assert self.proc.returncode == 0, f"exit code {self.proc.returncode}: {err.decode()}"
        assert b"server stopped" in err, err.decode()
        print(f"stop: {time.time() - t:.1f} s")


def cli(kestrel, args, stdin=b""):
    r = subprocess.run([kestrel] + args, input=stdin, capture_output=True, timeout=300)
    assert r.returncode == 0, f"kestrel {' '.join(args)}: {r.stderr.decode()}"
    return r.stdout


def check_error(status, body, expected_status, param=None, code=None):
    assert status == expected_status, f"expected HTTP {expected_status}, got {status}: {body!r}"
    error = json.loads(body)["error"]
    assert set(error) == {"message", "type", "param", "code"}, error
    assert isinstance(error["message"], str) and error["message"], error
    if param is not None:
        assert error["param"] == param, error
    if code is not None:
        assert error["code"] == code, error
    return error


def check_embeddings(a, client, server, embed_id):
    """Vectors equal `kestrel embed`'s, float32 for float32, in base64 (the client's default)
    and as floats; token-id inputs; errors."""
    import numpy as np

    texts = ["hello world", "the kestrel hovers over the field", "a"]
    args = ["embed", a.embed_model, "--json", "-t", THREADS]
    for t in texts:
        args += ["-p", t]
    expected = json.loads(cli(a.kestrel, args))
    want = np.array(expected["embeddings"], dtype=np.float32)
    # The client asks for base64 by default and decodes it; given explicitly, it leaves it as is.
    for fmt in (None, "float", "base64"):
        kwargs = {"encoding_format": fmt} if fmt else {}
        r = client.embeddings.create(model=embed_id, input=texts, **kwargs)
        if fmt == "base64":
            got = np.array([np.frombuffer(base64.b64decode(d.embedding), dtype="<f4")
                            for d in r.data])
        else:
            got = np.array([d.embedding for d in r.data], dtype=np.float32)
        assert got.shape == want.shape and np.array_equal(got, want), (fmt, got, want)
        assert [d.index for d in r.data] == list(range(len(texts)))
        assert r.usage.prompt_tokens == sum(expected["token_counts"]), r.usage
    one = client.embeddings.create(model=embed_id, input=texts[0])
    assert np.array_equal(np.array(one.data[0].embedding, dtype=np.float32), want[0])
    # Token ids: those /v1/embeddings counted for the text give its vector again.
    s, _, b = server.request("POST", "/v1/embeddings", json.dumps(
        {"model": embed_id, "input": texts[0], "encoding_format": "float"}))
    assert s == 200, b
    n = json.loads(b)["usage"]["prompt_tokens"]
    assert n == expected["token_counts"][0]
    # ... and those ids (`kestrel tokenize`: the encoder's own, special tokens included) as input
    # give the text's vector, one list of ids per input.
    ids = json.loads(cli(a.kestrel, ["tokenize", a.embed_model, "--ids", "-p", texts[0]]))
    assert len(ids) == n, (ids, n)
    s, _, b = server.request("POST", "/v1/embeddings", json.dumps(
        {"model": embed_id, "input": [ids, ids], "encoding_format": "float"}))
    assert s == 200, b
    by_ids = np.array([d["embedding"] for d in json.loads(b)["data"]], dtype=np.float32)
    assert np.array_equal(by_ids, np.stack([want[0], want[0]])), (by_ids, want[0])
    s, _, b = server.request("POST", "/v1/embeddings", json.dumps(
        {"model": embed_id, "input": [], "encoding_format": "float"}))
    check_error(s, b, 400, param="input")
    s, _, b = server.request("POST", "/v1/embeddings", json.dumps({"input": [{"x": 1}]}))
    check_error(s, b, 400, param="input")
    s, _, b = server.request("POST", "/v1/embeddings", json.dumps({"input": [[10 ** 9]]}))
    check_error(s, b, 400, param="input")
    s, _, b = server.request("POST", "/v1/embeddings", json.dumps(
        {"input": "x", "encoding_format": "int8"}))
    check_error(s, b, 400, param="encoding_format")
    try:
        client.embeddings.create(model="no-such-model", input="x")
        raise AssertionError("an unknown embedding model was accepted")
    except openai.NotFoundError as e:
        assert e.body["code"] == "model_not_found", e.body


def write_wav(path, rate, seconds):
    """A chord, 16-bit mono PCM."""
    import math
    import wave
    with wave.open(path, "wb") as w:
        w.setnchannels(1)
        w.setsampwidth(2)
        w.setframerate(rate)
        frames = bytearray()
        for i in range(int(rate * seconds)):
            v = sum(math.sin(2 * math.pi * f * i / rate) for f in (220, 330, 440)) / 4
            frames += int(v * 32000).to_bytes(2, "little", signed=True)
        w.writeframes(bytes(frames))


def check_transcriptions(a, client, server, whisper_id):
    """The text and segments equal `kestrel transcribe`'s; every response format; errors."""
    wav = os.path.join(a.tmp, f"server-check-{os.getpid()}.wav")
    write_wav(wav, 22050, 1.5)  # resampled to 16 kHz, as the CLI does
    try:
        expected = json.loads(cli(a.kestrel, ["transcribe", a.whisper_model, wav, "--json",
                                              "-t", THREADS]).decode("utf-8", "replace"))
        with open(wav, "rb") as f:
            audio = f.read()
        r = client.audio.transcriptions.create(model=whisper_id, file=("a.wav", audio))
        assert r.text == expected["text"], (r.text, expected["text"])
        v = client.audio.transcriptions.create(model=whisper_id, file=("a.wav", audio),
                                               response_format="verbose_json")
        assert v.text == expected["text"] and v.language == expected["language"], v
        assert [s.tokens for s in v.segments] == [s["tokens"] for s in expected["segments"]]
        assert [round(s.start, 2) for s in v.segments] == \
            [s["start"] for s in expected["segments"]]
        text = client.audio.transcriptions.create(model=whisper_id, file=("a.wav", audio),
                                                  response_format="text")
        assert text.strip() == expected["text"].strip(), (text, expected["text"])
        srt = client.audio.transcriptions.create(model=whisper_id, file=("a.wav", audio),
                                                 response_format="srt")
        assert srt.startswith("1\n00:00:00,000 --> "), srt
        vtt = client.audio.transcriptions.create(model=whisper_id, file=("a.wav", audio),
                                                 response_format="vtt")
        assert vtt.startswith("WEBVTT\n\n00:00:00.000 --> "), vtt
        # Not a WAV file; a truncated multipart upload; an unknown model: 4xx JSON errors.
        try:
            client.audio.transcriptions.create(model=whisper_id, file=("a.wav", b"not audio"))
            raise AssertionError("a file that is not WAV was accepted")
        except openai.BadRequestError as e:
            assert e.body["param"] == "file", e.body
        boundary = "kestrelboundary"
        body = (f"--{boundary}\r\nContent-Disposition: form-data; name=\"file\"; "
                f"filename=\"a.wav\"\r\nContent-Type: audio/wav\r\n\r\n").encode() + audio[:1000]
        s, _, b = server.request("POST", "/v1/audio/transcriptions", body, {
            "Content-Type": f"multipart/form-data; boundary={boundary}"})
        check_error(s, b, 400)
        s, _, b = server.request("POST", "/v1/audio/transcriptions", b"{}",
                                 {"Content-Type": "application/json"})
        check_error(s, b, 400, param="file")
        try:
            client.audio.transcriptions.create(model="no-such-model", file=("a.wav", audio))
            raise AssertionError("an unknown speech model was accepted")
        except openai.NotFoundError as e:
            assert e.body["code"] == "model_not_found", e.body
    finally:
        os.unlink(wav)


def check_memory_banner(a, banner):
    """The memory figures the server prints at start are `kestrel inspect`'s at its context
    (the attention scratch aside: it depends on the threads, which inspect does not take)."""
    def figures(text):
        out = {}
        for line in text.splitlines():
            name, sep, rest = line.strip().partition(":")
            if sep and " B " in rest:  # "  KV cache:     28508160 B (27.19 MiB) ..."
                out.setdefault(name, rest.split(" B ")[0].strip())  # the text model's: first
        return out

    inspect = figures(cli(a.kestrel, ["inspect", a.model, "--ctx", CTX]).decode())
    served = figures(banner)
    for name in ("weights", "activations", "KV cache", "sampler"):
        assert name in served and served[name] == inspect.get(name), (name, served, inspect)


def check_rerank(a, server, rerank_id):
    """/v1/rerank (and /rerank): each document's logit equal to `kestrel rerank --json`'s, best
    first, its sigmoid as relevance_score; top_n, return_documents, {"text"} documents; errors."""
    import numpy as np

    query = "the cat"
    docs = ["the dog sits", "cat", "a kestrel hovers over the field", "hello world"]
    args = ["rerank", a.rerank_model, "-q", query, "--json", "-t", THREADS]
    for d in docs:
        args += ["-d", d]
    want = np.array(json.loads(cli(a.kestrel, args))["logits"], dtype=np.float32)
    for path in ("/v1/rerank", "/rerank"):
        s, _, b = server.request("POST", path, json.dumps(
            {"model": rerank_id, "query": query, "documents": docs}))
        assert s == 200, b
        r = json.loads(b)
        assert r["model"] == rerank_id, r
        indices = [x["index"] for x in r["results"]]
        assert sorted(indices) == list(range(len(docs))), r
        got = np.array([x["logit"] for x in r["results"]], dtype=np.float32)
        assert np.array_equal(got, want[indices]), (got, want)
        assert list(got) == sorted(got, reverse=True), got
        for x in r["results"]:
            assert abs(x["relevance_score"] - 1 / (1 + math.exp(-x["logit"]))) < 1e-12, x
    s, _, b = server.request("POST", "/v1/rerank", json.dumps(
        {"query": query, "documents": [{"text": d} for d in docs], "top_n": 2,
         "return_documents": True}))
    assert s == 200, b
    r = json.loads(b)["results"]
    assert len(r) == 2 and all(x["document"]["text"] == docs[x["index"]] for x in r), r
    assert r[0]["index"] == int(np.argmax(want)), r
    s, _, b = server.request("POST", "/v1/rerank", json.dumps({"query": query, "documents": []}))
    check_error(s, b, 400, param="documents")
    s, _, b = server.request("POST", "/v1/rerank", json.dumps({"documents": docs}))
    check_error(s, b, 400, param="query")
    s, _, b = server.request("POST", "/v1/rerank", json.dumps(
        {"query": query, "documents": docs, "top_n": 0}))
    check_error(s, b, 400, param="top_n")
    s, _, b = server.request("POST", "/v1/rerank", json.dumps(
        {"model": "no-such-model", "query": query, "documents": docs}))
    check_error(s, b, 404, code="model_not_found")


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--kestrel", required=True)
    parser.add_argument("--model", required=True)
    parser.add_argument("--template", default="gemma")
    parser.add_argument("--embed-model", help="an encoder .kes for /v1/embeddings")
    parser.add_argument("--rerank-model", help="a cross-encoder .kes for /v1/rerank")
    parser.add_argument("--whisper-model", help="a Whisper .kes for /v1/audio/transcriptions")
    parser.add_argument("--tmp", default="/tmp", help="a folder for the test's WAV files")
    a = parser.parse_args()
    model_id = os.path.basename(a.model)[:-len(".kes")]
    started = time.time()

    embed_flags = ["--embed-model", a.embed_model] if a.embed_model else []
    if a.rerank_model:
        embed_flags += ["--rerank-model", a.rerank_model]
    if a.whisper_model:
        embed_flags += ["--whisper-model", a.whisper_model]
    server = Server(a.kestrel, a.model, ["--template", a.template] + embed_flags)
    banner = "".join(server.banner)
    # No --host given: loopback only.
    assert f"listening on http://127.0.0.1:{server.port}" in banner, banner
    check_memory_banner(a, banner)
    client = openai.OpenAI(base_url=f"http://127.0.0.1:{server.port}/v1", api_key="anything",
                           max_retries=0, timeout=150)

    # /v1/models: the models' file names without .kes.
    embed_id = os.path.basename(a.embed_model)[:-len(".kes")] if a.embed_model else None
    rerank_id = os.path.basename(a.rerank_model)[:-len(".kes")] if a.rerank_model else None
    whisper_id = os.path.basename(a.whisper_model)[:-len(".kes")] if a.whisper_model else None
    assert [m.id for m in client.models.list().data] == [model_id] + \
        [i for i in (embed_id, rerank_id, whisper_id) if i]
    if a.embed_model:
        check_embeddings(a, client, server, embed_id)
    if a.rerank_model:
        check_rerank(a, server, rerank_id)
    if a.whisper_model:
        check_transcriptions(a, client, server, whisper_id)

    # Greedy chat equals `kestrel chat --temp 0` on the same messages, streaming or not.
    conversations = [
        ("Hello there", None),
        ("What is the capital of France?", "You are terse."),
        ("Tell me a story about a kestrel", None),
    ]
    for user, system in conversations:
        messages = ([{"role": "system", "content": system}] if system else []) + \
                   [{"role": "user", "content": user}]
        chat_args = ["chat", a.model, "--template", a.template, "--temp", "0", "-n", "24",
                     "--ctx", CTX, "-t", THREADS]
        if system:
            chat_args += ["--system", system]
        expected = cli(a.kestrel, chat_args, (user + "\n").encode())
        expected = expected[:-1].decode("utf-8", "replace")  # the reply's closing newline
        r = client.chat.completions.create(model=model_id, messages=messages, temperature=0,
                                           max_tokens=24)
        got = r.choices[0].message.content
        assert got == expected, f"chat {messages}: server {got!r}, kestrel chat {expected!r}"
        assert r.object == "chat.completion" and r.choices[0].message.role == "assistant"
        assert r.choices[0].finish_reason in ("stop", "length")
        assert r.usage.completion_tokens <= 24 and r.usage.prompt_tokens > 0
        assert r.usage.total_tokens == r.usage.prompt_tokens + r.usage.completion_tokens

        chunks = list(client.chat.completions.create(
            model=model_id, messages=messages, temperature=0, max_tokens=24, stream=True,
            stream_options={"include_usage": True}))
        assert chunks[0].choices[0].delta.role == "assistant", chunks[0]
        content = [c for c in chunks[1:-2]]
        assert all(c.choices[0].finish_reason is None for c in content)
        streamed = "".join(c.choices[0].delta.content or "" for c in content)
        assert streamed == expected, f"streamed {streamed!r}, kestrel chat {expected!r}"
        assert chunks[-2].choices[0].finish_reason == r.choices[0].finish_reason
        assert chunks[-1].choices == [] and chunks[-1].usage.total_tokens == r.usage.total_tokens
        assert len({c.id for c in chunks}) == 1 and chunks[0].object == "chat.completion.chunk"

    # The raw stream: server-sent events, the last one `data: [DONE]`.
    s, headers, b = server.request("POST", "/v1/chat/completions", json.dumps(
        {"model": model_id, "messages": [{"role": "user", "content": "Hello there"}],
         "temperature": 0, "max_tokens": 8, "stream": True}))
    assert s == 200 and headers.get("Content-Type", "").startswith("text/event-stream"), headers
    events = [e for e in b.decode("utf-8", "replace").split("\n\n") if e]
    assert all(e.startswith("data: ") for e in events), events
    assert events[-1] == "data: [DONE]" and "[DONE]" not in "".join(events[:-1]), events

    # max_completion_tokens (the newer name of max_tokens) bounds the reply the same way.
    messages = [{"role": "user", "content": "Tell me a story about a kestrel"}]
    by_old = client.chat.completions.create(model=model_id, messages=messages, temperature=0,
                                            max_tokens=5)
    by_new = client.chat.completions.create(model=model_id, messages=messages, temperature=0,
                                            max_completion_tokens=5)
    assert by_new.choices[0].message.content == by_old.choices[0].message.content
    assert by_new.usage.completion_tokens == by_old.usage.completion_tokens <= 5, by_new.usage
    # chat_template_kwargs.enable_thinking (llama-server's and vLLM's extension) goes to the
    # template, which here does not read it: the same reply (tests/c_api_chat_test.cc checks
    # Qwen3's template with it).
    by_kwargs = client.chat.completions.create(
        model=model_id, messages=messages, temperature=0, max_tokens=5,
        extra_body={"chat_template_kwargs": {"enable_thinking": False}})
    assert by_kwargs.choices[0].message.content == by_old.choices[0].message.content

    # A second turn: equal to `kestrel chat`'s second reply, and prefilled after what the slot
    # holds (the first prompt and reply), when the reply's text gives back its tokens.
    turns = ["Hello there", "How are you?"]
    out = cli(a.kestrel, ["chat", a.model, "--template", a.template, "--temp", "0", "-n", "24",
                          "--ctx", CTX, "-t", THREADS], "".join(t + "\n" for t in turns).encode())
    replies = [r.decode("utf-8", "replace") for r in out.split(b"\n")[:2]]
    messages = [{"role": "user", "content": turns[0]}]
    first = client.chat.completions.create(model=model_id, messages=messages, temperature=0,
                                           max_tokens=24)
    assert first.choices[0].message.content == replies[0]
    messages += [{"role": "assistant", "content": replies[0]},
                 {"role": "user", "content": turns[1]}]
    second = client.chat.completions.create(model=model_id, messages=messages, temperature=0,
                                            max_tokens=24)
    assert second.choices[0].message.content == replies[1], (second, replies)
    cached = second.usage.prompt_tokens_details.cached_tokens
    if "\ufffd" not in replies[0]:
        assert cached == first.usage.total_tokens, (cached, first.usage)
    else:
        # A reply cut inside a character does not give back its tokens as text: only the first
        # prompt is reused for sure.
        assert first.usage.prompt_tokens <= cached <= first.usage.total_tokens, (cached,
                                                                                 first.usage)

    # Greedy completions equal `kestrel run --temp 0` (which echoes the prompt).
    stop_checked = False
    for prompt in ["Hello", "Once upon a time", "The kestrel hovers"]:
        out = cli(a.kestrel, ["run", a.model, "-p", prompt, "-n", "16", "--temp", "0",
                              "--ctx", CTX, "-t", THREADS])
        assert out.startswith(prompt.encode()) and out.endswith(b"\n"), out
        raw = out[len(prompt):-1]
        expected = raw.decode("utf-8", "replace")
        r = client.completions.create(model=model_id, prompt=prompt, temperature=0,
                                      max_tokens=16)
        assert r.choices[0].text == expected, f"{prompt!r}: {r.choices[0].text!r} vs {expected!r}"
        assert r.usage.completion_tokens <= 16
        streamed = "".join(c.choices[0].text for c in client.completions.create(
            model=model_id, prompt=prompt, temperature=0, max_tokens=16, stream=True))
        assert streamed == expected, f"{prompt!r}: streamed {streamed!r} vs {expected!r}"
        # A stop sequence: an ASCII character of the reply, first seen at k > 0, cuts it there.
        for k in range(1, len(raw)):
            ch = raw[k:k + 1]
            if 0x20 <= raw[k] < 0x7F and ch not in raw[:k]:
                for stop in (ch.decode(), [ch.decode(), "never-generated"]):
                    r = client.completions.create(model=model_id, prompt=prompt, temperature=0,
                                                  max_tokens=16, stop=stop)
                    assert r.choices[0].text == raw[:k].decode("utf-8", "replace"), (stop, r)
                    assert r.choices[0].finish_reason == "stop"
                    streamed = "".join(c.choices[0].text for c in client.completions.create(
                        model=model_id, prompt=prompt, temperature=0, max_tokens=16, stop=stop,
                        stream=True))
                    assert streamed == r.choices[0].text, (streamed, r.choices[0].text)
                stop_checked = True
                break
    assert stop_checked, "no reply had an ASCII character to stop at"

    # Sampling with a seed repeats itself.
    seeded = [client.completions.create(model=model_id, prompt="Hello", temperature=1.0,
                                        top_p=0.9, seed=7, max_tokens=12).choices[0].text
              for _ in range(2)]
    assert seeded[0] == seeded[1], seeded

    # /tokenize and /detokenize.
    status, _, body = server.request("POST", "/tokenize",
                                     json.dumps({"content": "Hello world"}))
    assert status == 200, body
    tokens = json.loads(body)["tokens"]
    assert tokens and all(isinstance(t, int) for t in tokens)
    status, _, body = server.request("POST", "/detokenize", json.dumps({"tokens": tokens}))
    assert status == 200 and json.loads(body)["content"] == "Hello world", body

    # Bad requests: each a 4xx JSON error, and the server goes on serving.
    chat = "/v1/chat/completions"
    hello = [{"role": "user", "content": "Hi"}]
    s, _, b = server.request("POST", chat, b'{"messages": [')
    check_error(s, b, 400, code="invalid_json")
    s, _, b = server.request("POST", chat, b'[1, 2]')
    check_error(s, b, 400)
    s, _, b = server.request("POST", chat, json.dumps({"messages": "Hi"}))
    check_error(s, b, 400, param="messages")
    s, _, b = server.request("POST", chat, json.dumps({"messages": hello, "temperature": "hot"}))
    check_error(s, b, 400, param="temperature")
    s, _, b = server.request("POST", chat, json.dumps({"messages": hello, "max_tokens": "5"}))
    check_error(s, b, 400, param="max_tokens")
    s, _, b = server.request("POST", chat, json.dumps({"messages": hello, "stop": [1]}))
    check_error(s, b, 400, param="stop")
    s, _, b = server.request("POST", chat, json.dumps(
        {"messages": hello, "chat_template_kwargs": {"enable_thinking": "no"}}))
    check_error(s, b, 400, param="chat_template_kwargs.enable_thinking")
    s, _, b = server.request("POST", chat, json.dumps(
        {"messages": hello, "chat_template_kwargs": [True]}))
    check_error(s, b, 400, param="chat_template_kwargs")
    s, _, b = server.request("POST", chat, json.dumps({"messages": [{"role": "wizard",
                                                                      "content": "x"}]}))
    check_error(s, b, 400, param="messages[0].role")
    s, _, b = server.request("POST", "/v1/completions", json.dumps({"prompt": {"a": 1}}))
    check_error(s, b, 400, param="prompt")
    s, _, b = server.request("POST", "/detokenize", json.dumps({"tokens": [10 ** 9]}))
    check_error(s, b, 400, param="tokens")
    try:
        client.chat.completions.create(model="no-such-model", messages=hello)
        raise AssertionError("an unknown model was accepted")
    except openai.NotFoundError as e:
        assert e.status_code == 404 and e.body["code"] == "model_not_found", e.body
    try:
        client.chat.completions.create(model=model_id, messages=[])
        raise AssertionError("empty messages were accepted")
    except openai.BadRequestError as e:
        assert e.body["param"] == "messages", e.body
    long_prompt = "kestrel " * (2 * int(CTX))
    for create in (lambda: client.completions.create(model=model_id, prompt=long_prompt),
                   lambda: client.chat.completions.create(
                       model=model_id, messages=[{"role": "user", "content": long_prompt}])):
        try:
            create()
            raise AssertionError("a prompt longer than the context was accepted")
        except openai.BadRequestError as e:
            assert e.body["code"] == "context_length_exceeded", e.body
    try:
        client.completions.create(model=model_id, prompt="Hi", max_tokens=10 * int(CTX))
        raise AssertionError("max_tokens past the context was accepted")
    except openai.BadRequestError as e:
        assert e.body["code"] == "context_length_exceeded", e.body
    invalid_utf8 = b'{"messages": [{"role": "user", "content": "\xff\xfe"}]}'
    s, _, b = server.request("POST", chat, invalid_utf8)
    check_error(s, b, 400, code="invalid_json")
    # A 100 MB body: refused (413) by its Content-Length; the server reads no more than it must.
    t = time.time()
    big = b'{"prompt": "' + b"a" * (100 << 20) + b'"}'
    try:
        s, _, b = server.request("POST", "/v1/completions", big, timeout=300)
        check_error(s, b, 413, code="body_too_large")
    except (BrokenPipeError, ConnectionResetError):
        pass  # the server answered 413 and closed before taking the rest: also a refusal
    print(f"100 MB body: {time.time() - t:.1f} s")
    s, _, b = server.request("GET", "/v1/nothing")
    check_error(s, b, 404)

    # A client that goes away mid-stream frees its slot: the next request is served.
    conn = http.client.HTTPConnection("127.0.0.1", server.port, timeout=150)
    conn.request("POST", chat, json.dumps({"messages": hello, "stream": True, "max_tokens": 200}))
    r = conn.getresponse()
    assert r.status == 200 and r.getheader("Content-Type").startswith("text/event-stream")
    r.fp.readline()
    conn.sock.shutdown(socket.SHUT_RDWR)
    conn.close()
    r = client.chat.completions.create(model=model_id, messages=hello, max_tokens=4)
    assert r.usage.completion_tokens <= 4
    status, _, _ = server.request("GET", "/health")
    assert status == 200
    client.close()  # an idle keep-alive connection would hold the shutdown for its 5 s
    server.stop()

    # --api-key: a bearer token is required (but not for /health); --metrics: Prometheus text.
    server = Server(a.kestrel, a.model, ["--template", a.template, "--api-key", "sesame",
                                         "--metrics"])
    s, _, b = server.request("GET", "/v1/models")
    check_error(s, b, 401, code="invalid_api_key")
    s, _, b = server.request("GET", "/v1/models", headers={"Authorization": "Bearer wrong"})
    check_error(s, b, 401, code="invalid_api_key")
    s, _, _ = server.request("GET", "/health")
    assert s == 200
    keyed = openai.OpenAI(base_url=f"http://127.0.0.1:{server.port}/v1", api_key="sesame",
                          max_retries=0, timeout=150)
    r = keyed.completions.create(model=model_id, prompt="Hello", max_tokens=5, temperature=0)
    s, headers, b = server.request("GET", "/metrics", headers={"Authorization": "Bearer sesame"})
    assert s == 200, b
    metrics = dict(line.split() for line in b.decode().splitlines() if not line.startswith("#"))
    assert float(metrics["kestrel_tokens_predicted_total"]) == r.usage.completion_tokens, metrics
    assert float(metrics["kestrel_prompt_tokens_total"]) == r.usage.prompt_tokens, metrics
    assert metrics["kestrel_requests_processing"] == "0", metrics
    # Time was spent prefilling and generating (the seconds counters move with the tokens).
    assert float(metrics["kestrel_prompt_seconds_total"]) > 0, metrics
    assert float(metrics["kestrel_tokens_predicted_seconds_total"]) > 0, metrics
    keyed.close()
    server.stop()

    assert "memory of the server" in banner, banner
    print(f"server checks passed in {time.time() - started:.1f} s")


if __name__ == "__main__":
    main()
