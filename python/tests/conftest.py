"""Fixtures of the kestrel package's tests: tiny random-weight models (a Gemma 3 GGUF, a BERT
checkpoint, a Whisper CTranslate2 folder, written by the repository's tests/py scripts and
converted with kestrel.convert) and the kestrel programs the results are compared with.

The programs are those of a build of the same source tree: $KESTREL_BIN_DIR, by default
build/release of the repository (scripts/test-python.sh passes its own). Missing ones fail the
tests that need them, loudly: nothing is skipped.
"""

from __future__ import annotations

import math
import os
import struct
import subprocess
import sys
import threading
import time
import wave
from pathlib import Path

import pytest

import kestrel

REPO = Path(__file__).resolve().parents[2]
BIN_DIR = Path(os.environ.get("KESTREL_BIN_DIR", REPO / "build" / "release"))


def _program(name: str) -> str:
    path = BIN_DIR / name
    if not os.access(path, os.X_OK):
        pytest.fail(
            f"{path} is missing: build it (scripts/build.sh release) or set KESTREL_BIN_DIR "
            "to a build folder of this source tree"
        )
    return str(path)


def run(args: list[str]) -> subprocess.CompletedProcess:
    """Runs a program, failing the test with its stderr when it fails. Its output is decoded
    as the package decodes generated text: bytes that are not UTF-8 become U+FFFD (a random
    model's tokens often are)."""
    r = subprocess.run(args, capture_output=True)
    if r.returncode != 0:
        pytest.fail(f"{' '.join(args)} exited {r.returncode}: {r.stderr.decode(errors='replace')}")
    r.stdout = r.stdout.decode("utf-8", errors="replace")
    r.stderr = r.stderr.decode("utf-8", errors="replace")
    return r


@pytest.fixture(scope="session")
def cli() -> str:
    """The kestrel program."""
    return _program("kestrel")


@pytest.fixture(scope="session")
def convert_cli() -> str:
    """The kestrel-convert program."""
    return _program("kestrel-convert")


# The scripts need the project virtualenv's gguf, safetensors and numpy (scripts/install-deps.sh),
# which a fresh virtualenv holding only the package lacks.
SCRIPT_PYTHON = os.environ.get(
    "KESTREL_SCRIPT_PYTHON",
    str(REPO / ".venv" / "bin" / "python")
    if (REPO / ".venv" / "bin" / "python").exists()
    else sys.executable,
)


def _written_by_script(script: str, path: Path, *args: str) -> Path:
    run([SCRIPT_PYTHON, str(REPO / "tests" / "py" / script), str(path), *args])
    return path


def _converted(src: Path, **options) -> Path:
    """``src`` converted to a .kes file beside it."""
    path = src.with_suffix(".kes")
    kestrel.convert(src, path, **options)
    return path


@pytest.fixture(scope="session")
def models(tmp_path_factory) -> Path:
    return tmp_path_factory.mktemp("models")


@pytest.fixture(scope="session")
def tiny_gguf(models: Path) -> Path:
    """The tests' tiny random Gemma 3 (tests/py/make_tiny_gemma3.py, seed 1)."""
    return _written_by_script("make_tiny_gemma3.py", models / "tiny.gguf", "--seed", "1")


@pytest.fixture(scope="session")
def tiny_kes(tiny_gguf: Path) -> Path:
    return _converted(tiny_gguf, weights="f32")


@pytest.fixture(scope="session")
def tiny(tiny_kes: Path) -> kestrel.Model:
    """The tiny Gemma 3 on one thread, as the CLI runs with -t 1."""
    return kestrel.Model(tiny_kes, n_threads=1)


@pytest.fixture(scope="session")
def bert_folder(models: Path) -> Path:
    """A tiny random BERT sentence encoder checkpoint (tests/py/make_tiny_bert.py)."""
    return _written_by_script("make_tiny_bert.py", models / "tiny-bert")


@pytest.fixture(scope="session")
def bert_kes(bert_folder: Path) -> Path:
    return _converted(bert_folder)


@pytest.fixture(scope="session")
def reranker_kes(models: Path) -> Path:
    """A tiny random BERT cross-encoder (make_tiny_bert.py --reranker), converted."""
    return _converted(_written_by_script("make_tiny_bert.py", models / "tiny-reranker",
                                         "--reranker"))


def write_tone_wav(path: Path, rate: int, seconds: float) -> None:
    """16-bit mono PCM of a gliding tone (the one tests/whisper_tiny_test.cc writes)."""
    n = int(rate * seconds)
    frames = bytearray()
    for i in range(n):
        t = i / rate
        x = 8000 * math.sin(2 * 3.14159265 * (200 + 300 * t) * t)
        frames += struct.pack("<h", int(x))
    with wave.open(str(path), "wb") as w:
        w.setnchannels(1)
        w.setsampwidth(2)
        w.setframerate(rate)
        w.writeframes(bytes(frames))


@pytest.fixture(scope="session")
def whisper_folder(models: Path) -> Path:
    """A tiny random Whisper as a CTranslate2 folder (tests/py/make_tiny_whisper.py)."""
    return _written_by_script("make_tiny_whisper.py", models / "tiny-whisper")


@pytest.fixture(scope="session")
def whisper_kes(whisper_folder: Path) -> Path:
    return _converted(whisper_folder)


@pytest.fixture(scope="session")
def tone_wav(models: Path) -> Path:
    path = models / "tone.wav"
    write_tone_wav(path, 16000, 3.0)
    return path


def ticks_during(call) -> tuple[int, float]:
    """Runs call() while another Python thread counts; returns the counts made while the call
    was inside the library (between its first and last quarter) and the call's seconds."""
    stamps: list[float] = []
    stop = threading.Event()

    def count() -> None:
        while not stop.is_set():
            stamps.append(time.perf_counter())

    thread = threading.Thread(target=count)
    thread.start()
    time.sleep(0.05)
    start = time.perf_counter()
    call()
    end = time.perf_counter()
    stop.set()
    thread.join()
    quarter = (end - start) / 4
    inside = [t for t in stamps if start + quarter < t < end - quarter]
    return len(inside), end - start
