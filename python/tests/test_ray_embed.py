"""examples/ray_embed.py on Ray's local cluster: every line of every file embedded exactly once,
each vector bit for bit the one kestrel.Model.embed gives in this process.

The example runs as a user runs it, as a program joining a running cluster (--address), here one
this test starts with 2 CPUs; its two actors of one thread hold both, the case that once hung
(readers left no CPU). Ray comes from scripts/requirements.txt: without it this fails, loudly.
"""

from __future__ import annotations

import subprocess
import sys

import numpy as np
import pyarrow.parquet as pq
import pytest
import ray

import kestrel
from conftest import REPO

EXAMPLE = REPO / "examples" / "ray_embed.py"

FILES = {
    "a.txt": "hello world\n\na longer sentence about a cat on a mat\r\nx\n",
    "b.txt": "".join(f"line number {i} of b\n" for i in range(1, 15)) + "no newline at the end",
    "sub/c.txt": "   \ncafé au lait\n\n\nthe end\n",
}


def _expected_lines() -> dict:
    """(path, 1-based line) -> text, for the non-blank lines, worked out independently."""
    lines = {}
    for path, text in FILES.items():
        for number, line in enumerate(text.split("\n"), start=1):
            if line.strip():
                lines[(path, number)] = line.rstrip("\r")
    return lines


@pytest.fixture(scope="module")
def ray_cluster():
    ray.init(num_cpus=2, include_dashboard=False, log_to_driver=False)
    try:
        yield ray.get_runtime_context().gcs_address
    finally:
        ray.shutdown()


def test_ray_embed_equals_in_process_embed(bert_kes, tmp_path, ray_cluster):
    folder = tmp_path / "texts"
    for name, text in FILES.items():
        (folder / name).parent.mkdir(parents=True, exist_ok=True)
        (folder / name).write_bytes(text.encode("utf-8"))
    out = tmp_path / "vectors"
    args = [sys.executable, str(EXAMPLE), str(bert_kes), str(folder), str(out),
            "--actors", "2", "--batch-size", "4", "--address", ray_cluster]
    # The timeouts only end a hang: on a slow, loaded machine Ray's actors are slow to start.
    r = subprocess.run(args, capture_output=True, text=True, timeout=600)
    assert r.returncode == 0, r.stderr[-4000:]

    table = pq.read_table(out)  # plain pyarrow: the output needs no Ray to read
    keys = list(zip(table.column("path").to_pylist(), table.column("line").to_pylist()))
    expected = _expected_lines()
    assert len(keys) == len(set(keys)) == len(expected)  # each line exactly once
    assert set(keys) == set(expected)
    texts = dict(zip(keys, table.column("text").to_pylist()))
    assert texts == expected

    embedding = table.column("embedding").combine_chunks()
    dim = kestrel.Model(bert_kes).embedding_dim
    assert embedding.type.list_size == dim and str(embedding.type.value_type) == "float"
    ours = embedding.flatten().to_numpy().reshape(len(keys), dim)
    order = sorted(range(len(keys)), key=lambda i: keys[i])
    in_process = kestrel.Model(bert_kes, n_threads=1).embed([expected[k] for k in sorted(expected)])
    assert ours[order].view(np.uint32).tolist() == in_process.view(np.uint32).tolist()

    # A second run into the same folder refuses rather than adding duplicate rows.
    again = subprocess.run(args, capture_output=True, text=True, timeout=600)
    assert again.returncode != 0 and str(out) in again.stderr
