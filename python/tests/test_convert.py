"""kestrel.convert: kestrel-convert's bytes and its refusals, as exceptions with codes."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

import kestrel
from conftest import run


@pytest.mark.parametrize("weights", [None, "f32", "q8"])
def test_writes_kestrel_converts_bytes(tiny_gguf, convert_cli, tmp_path, weights):
    ours, theirs = tmp_path / "ours.kes", tmp_path / "theirs.kes"
    args = [convert_cli, str(tiny_gguf), str(theirs)]
    if weights is not None:
        args += ["--weights", weights]
    run(args)
    kestrel.convert(str(tiny_gguf), ours, weights=weights)  # str and PathLike both
    assert ours.read_bytes() == theirs.read_bytes()


@pytest.mark.parametrize("folder", ["bert_folder", "whisper_folder"])
@pytest.mark.parametrize("weights", [None, "q8"])
def test_folders_convert_to_kestrel_converts_bytes(request, convert_cli, tmp_path, folder,
                                                   weights):
    src = request.getfixturevalue(folder)
    ours, theirs = tmp_path / "ours.kes", tmp_path / "theirs.kes"
    args = [convert_cli, str(src), str(theirs)]
    if weights is not None:
        args += ["--weights", weights]
    run(args)
    kestrel.convert(src, ours, weights=weights)
    assert ours.read_bytes() == theirs.read_bytes()


def _cli_error(args: list[str]) -> str:
    import subprocess

    r = subprocess.run(args, capture_output=True, text=True)
    assert r.returncode == 1, r
    prefix = "kestrel-convert: error: "
    assert r.stderr.startswith(prefix), r.stderr
    return r.stderr[len(prefix):].rstrip("\n")


def test_refuses_as_kestrel_convert_does(tiny_gguf, convert_cli, tmp_path):
    not_model = tmp_path / "notes.gguf"
    not_model.write_text("not a GGUF file\n")
    out = tmp_path / "out.kes"
    out.write_bytes(b"previous output")
    model = tmp_path / "model.gguf"
    model.write_bytes(tiny_gguf.read_bytes())
    cases = [
        (not_model, out, kestrel.BadModelError, 3),
        (tmp_path / "missing.gguf", out, kestrel.KestrelIOError, 2),
        (model, model, kestrel.InvalidArgumentError, 1),
    ]
    for src, dst, error, code in cases:
        with pytest.raises(error) as info:
            kestrel.convert(src, dst)
        assert info.value.code == code
        assert isinstance(info.value, kestrel.KestrelError)
        assert str(info.value) == _cli_error([convert_cli, str(src), str(dst)])
        # Nothing half-written: the earlier output and the input as they were, no temporary.
        assert out.read_bytes() == b"previous output"
        assert model.read_bytes() == tiny_gguf.read_bytes()
        assert sorted(os.listdir(tmp_path)) == ["model.gguf", "notes.gguf", "out.kes"]


def test_refuses_an_unknown_weights_type(tiny_gguf, tmp_path):
    with pytest.raises(kestrel.InvalidArgumentError, match="found 'q3'") as info:
        kestrel.convert(tiny_gguf, tmp_path / "x.kes", weights="q3")
    assert info.value.status == "KES_INVALID_ARGUMENT"
    assert isinstance(info.value, ValueError)
    assert not (tmp_path / "x.kes").exists()
