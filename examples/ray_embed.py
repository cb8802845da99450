#!/usr/bin/env python3
"""Embeds every line of every text file in a folder with Kestrel on a Ray cluster (Ray Data).

    python examples/ray_embed.py MODEL.kes INPUT_FOLDER OUTPUT --actors N --batch-size B
                                 [--threads T] [--address auto]

Each non-blank line of each file under INPUT_FOLDER (UTF-8, lines split at "\\n", a trailing
"\\r" dropped) becomes one row of Parquet files written under OUTPUT (a folder that must not
exist yet): `path` (the file's path relative to INPUT_FOLDER), `line` (its 1-based line number
there), `text`, and `embedding`, a fixed-size list of float32, the very vector
`kestrel.Model(MODEL).embed(text)` gives (`kestrel embed`'s, bit for bit). Read it back with
`ray.data.read_parquet(OUTPUT)`, pandas or pyarrow; row order is not the input's.

The work: Ray Data reads the files (read_binary_files), splits them into lines (flat_map) and
feeds batches of B lines to a pool of N actors (map_batches with a callable class), each of
which opens the model once and embeds batch after batch with T threads (Ray reserves T CPUs
per actor). The .kes file is memory-mapped, so the actors on one machine share one copy of the
weights through the page cache: an actor costs its activations, not another model.

--address: none starts a Ray instance on this machine for the run (or joins $RAY_ADDRESS);
"auto" joins the cluster this machine belongs to (`ray start`); "ray://HEAD:10001" connects
from outside through Ray Client. On a cluster MODEL must be readable at the same absolute path
on every node and INPUT_FOLDER and OUTPUT must be shared (NFS, or s3://, gs://): see "Many
machines: Ray" in docs/python.md.
"""

from __future__ import annotations

import argparse
import os
import sys
from typing import Any, Dict, Iterator, List, Optional

import pyarrow as pa
import ray
import ray.data


def _local_or_url(path: str) -> str:
    """A URL (s3://...) as given, a local path made absolute: tasks and actors on other
    workers do not share the driver's working directory."""
    return path if "://" in path else os.path.abspath(path)


def _relative_to(root: str, path: str) -> str:
    """Ray reports each file's path as its filesystem sees it (no scheme); give it relative
    to the folder read, so the output does not depend on where that folder was mounted."""
    prefix = root.split("://", 1)[-1].rstrip("/") + "/"
    return path[len(prefix) :] if path.startswith(prefix) else path


def split_lines(row: Dict[str, Any], root: str) -> Iterator[Dict[str, Any]]:
    """flat_map: one file's bytes to one row per non-blank line, with where it came from."""
    path = _relative_to(root, row["path"])
    try:
        text = bytes(row["bytes"]).decode("utf-8")
    except UnicodeDecodeError as e:
        raise ValueError(
            f"{row['path']}: expected UTF-8 text, found {e.reason} at byte {e.start}"
        ) from None
    for number, line in enumerate(text.split("\n"), start=1):
        line = line.rstrip("\r")
        if line.strip():
            yield {"path": path, "line": number, "text": line}


class Embedder:
    """map_batches' callable class: Ray builds one per actor, so each actor opens the model
    once (mapped: the weights are read in place, shared with the other actors on its node) and
    keeps its encoder between batches."""

    def __init__(self, model_path: str, n_threads: int) -> None:
        import kestrel  # in the actor's process, not the driver's

        self._model = kestrel.Model(model_path, n_threads=n_threads)
        self._dim = self._model.embedding_dim

    def __call__(self, batch: pa.Table) -> pa.Table:
        vectors = self._model.embed(batch.column("text").to_pylist())  # (rows, dim) float32
        # A plain Arrow fixed-size list (not Ray's tensor extension type), so any Parquet reader
        # gets float32 vectors back.
        flat = pa.array(vectors.reshape(-1), type=pa.float32())
        return batch.append_column("embedding", pa.FixedSizeListArray.from_arrays(flat, self._dim))


def embed_folder(
    model: str, folder: str, output: str, *, actors: int, batch_size: int, threads: int
) -> None:
    """Embeds the lines of the files under ``folder`` into Parquet files under ``output``, on
    the Ray cluster this process is connected to (ray.init first)."""
    model, folder, output = _local_or_url(model), _local_or_url(folder), _local_or_url(output)
    # Reading, splitting and writing reserve no CPU: they are light next to embedding, and with a
    # reservation, actors holding every CPU (--actors x --threads = the cluster's cores) would
    # wait forever for lines no reader could be scheduled to produce (or a writer to take).
    files = ray.data.read_binary_files(folder, include_paths=True, num_cpus=0)
    lines = files.flat_map(split_lines, fn_kwargs={"root": folder}, num_cpus=0)
    embedded = lines.map_batches(
        Embedder,
        fn_constructor_args=(model, threads),
        batch_size=batch_size,
        batch_format="pyarrow",
        compute=ray.data.ActorPoolStrategy(size=actors),
        num_cpus=threads,
        udf_modifying_row_count=False,
    )
    embedded.write_parquet(output, mode=ray.data.SaveMode.ERROR, ray_remote_args={"num_cpus": 0})


def _positive(text: str) -> int:
    value = int(text)
    if value < 1:
        raise argparse.ArgumentTypeError(f"expected a count of 1 or more, found {value}")
    return value


def main(argv: Optional[List[str]] = None) -> int:
    parser = argparse.ArgumentParser(
        description="Embed every line of the text files in a folder with Kestrel on Ray.")
    parser.add_argument("model", help="a .kes sentence encoder (kestrel-convert)")
    parser.add_argument("input", help="folder of UTF-8 text files (local, NFS or s3://...)")
    parser.add_argument("output", help="folder to write Parquet files to (must not exist)")
    parser.add_argument("--actors", type=_positive, default=1,
                        help="actors, each with the model open (default 1)")
    parser.add_argument("--batch-size", type=_positive, default=64,
                        help="lines per embed call (default 64)")
    parser.add_argument("--threads", type=_positive, default=1,
                        help="threads per actor, and CPUs Ray reserves for it (default 1)")
    parser.add_argument("--address", default=None,
                        help='Ray cluster: none starts one here, "auto" joins the local '
                             'node\'s cluster, "ray://HEAD:10001" through Ray Client')
    args = parser.parse_args(argv)
    if not ray.is_initialized():
        ray.init(address=args.address)
    embed_folder(args.model, args.input, args.output, actors=args.actors,
                 batch_size=args.batch_size, threads=args.threads)
    print(f"ray_embed: wrote {args.output}", file=sys.stderr)
    return 0


if __name__ == "__main__":
    sys.exit(main())
