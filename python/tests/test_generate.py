"""Tokens and generation on the tiny Gemma 3, against `kestrel tokenize --ids` and `kestrel run`."""

from __future__ import annotations

import json

import pytest

import kestrel
from conftest import run

PROMPT = "the quick brown fox"
TEXTS = [PROMPT, "<start_of_turn>user\nhi<end_of_turn>", "héllo wörld ✓", ""]


@pytest.mark.parametrize("text", TEXTS)
def test_token_ids_equal_the_clis(tiny, tiny_kes, cli, text):
    theirs = json.loads(run([cli, "tokenize", str(tiny_kes), "-p", text, "--ids"]).stdout)
    assert tiny.tokenize(text) == theirs
    no_bos = json.loads(
        run([cli, "tokenize", str(tiny_kes), "-p", text, "--ids", "--no-bos"]).stdout
    )
    assert tiny.tokenize(text, add_special=False) == no_bos
    plain = json.loads(
        run([cli, "tokenize", str(tiny_kes), "-p", text, "--ids", "--no-parse-special"]).stdout
    )
    assert tiny.tokenize(text, parse_special=False) == plain


def test_detokenize_gives_the_text_back(tiny):
    for text in [PROMPT, "héllo wörld ✓", ""]:
        assert tiny.detokenize(tiny.tokenize(text, add_special=False)) == text


@pytest.mark.parametrize("n", [1, 24])
def test_greedy_generate_equals_kestrel_run(tiny, tiny_kes, cli, n):
    out = run(
        [cli, "run", str(tiny_kes), "-p", PROMPT, "-n", str(n), "--temp", "0", "-t", "1"]
    ).stdout
    text = tiny.generate(PROMPT, max_tokens=n, temperature=0)
    assert out == PROMPT + text + "\n"
    assert text != ""


def test_sampling_equals_kestrel_run_with_the_same_seed(tiny, tiny_kes, cli):
    args = ["--temp", "1.5", "--top-k", "20", "--top-p", "0.9", "--seed", "7"]
    out = run([cli, "run", str(tiny_kes), "-p", PROMPT, "-n", "24", "-t", "1", *args]).stdout
    text = tiny.generate(PROMPT, max_tokens=24, temperature=1.5, top_k=20, top_p=0.9, seed=7)
    assert out == PROMPT + text + "\n"


def test_stream_gives_the_same_text_in_pieces(tiny):
    whole = tiny.generate(PROMPT, max_tokens=24, temperature=0)
    stream = tiny.generate(PROMPT, max_tokens=24, temperature=0, stream=True)
    assert not isinstance(stream, str)
    pieces = list(stream)
    assert len(pieces) > 1
    assert "".join(pieces) == whole
    sampled = tiny.generate(PROMPT, max_tokens=24, temperature=1.5, seed=3)
    assert "".join(tiny.generate(PROMPT, max_tokens=24, temperature=1.5, seed=3, stream=True)) \
        == sampled


def test_a_stream_left_early_frees_its_session(tiny):
    for _ in range(3):
        stream = tiny.generate(PROMPT, max_tokens=24, temperature=0, stream=True)
        next(iter(stream))
        stream.close()
    assert tiny.generate(PROMPT, max_tokens=4, temperature=0) != ""


def test_prompt_as_token_ids(tiny):
    ids = tiny.tokenize(PROMPT)
    assert tiny.generate(ids, max_tokens=8, temperature=0) == \
        tiny.generate(PROMPT, max_tokens=8, temperature=0)


def test_a_prompt_longer_than_the_context(tiny_kes):
    model = kestrel.Model(tiny_kes, n_threads=1, context_length=8)
    with pytest.raises(kestrel.ContextFullError) as info:
        model.generate(PROMPT * 4, max_tokens=2)
    assert info.value.code == 6
    with pytest.raises(kestrel.ContextFullError, match="more than the context of 8 tokens"):
        model.generate(PROMPT * 4, max_tokens=2, stream=True)
    assert "".join(model.generate("the", max_tokens=2, temperature=0, stream=True)) != ""


def test_two_threads_on_one_model(tiny):
    import threading

    expected = tiny.generate(PROMPT, max_tokens=24, temperature=0)
    results: list[str] = []

    def work() -> None:
        for _ in range(5):
            results.append(tiny.generate(PROMPT, max_tokens=24, temperature=0))

    threads = [threading.Thread(target=work) for _ in range(2)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert results == [expected] * 10
