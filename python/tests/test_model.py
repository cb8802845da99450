"""Model as a Python object: errors with codes, pickling by path, the GIL released while the
library runs, closing."""

from __future__ import annotations

import pickle

import pytest

import kestrel
from conftest import ticks_during

PROMPT = "the quick brown fox"


def test_errors_carry_the_code_and_the_message(tmp_path):
    with pytest.raises(kestrel.KestrelIOError) as info:
        kestrel.Model(tmp_path / "missing.kes")
    e = info.value
    assert (e.code, e.status) == (2, "KES_IO_ERROR")
    assert "missing.kes" in e.message and str(e) == e.message
    assert isinstance(e, OSError) and isinstance(e, kestrel.KestrelError)

    bad = tmp_path / "bad.kes"
    bad.write_bytes(b"\0" * 4096)
    with pytest.raises(kestrel.BadModelError) as info:
        kestrel.Model(bad)
    assert info.value.code == 3 and info.value.message

    # Errors pickle with their class and code (multiprocessing, Ray).
    again = pickle.loads(pickle.dumps(info.value))
    assert type(again) is kestrel.BadModelError
    assert (again.code, again.message) == (3, info.value.message)


def test_the_wrong_kind_of_model(tiny, bert_kes, tone_wav):
    with pytest.raises(kestrel.UnsupportedError) as info:
        tiny.embed(["a text"])
    assert info.value.code == 4 and "encoder" in str(info.value)
    with pytest.raises(kestrel.UnsupportedError):
        tiny.transcribe(tone_wav)
    with pytest.raises(kestrel.UnsupportedError):
        kestrel.Model(bert_kes).generate("hello")


def test_bad_options(tiny_kes, tiny):
    with pytest.raises(kestrel.InvalidArgumentError, match="kv_type"):
        kestrel.Model(tiny_kes, kv_type="f8")
    with pytest.raises(kestrel.InvalidArgumentError, match="top-p"):
        tiny.generate(PROMPT, top_p=1.5)
    with pytest.raises(kestrel.InvalidArgumentError, match="max_tokens"):
        tiny.generate(PROMPT, max_tokens=-1)
    with pytest.raises(kestrel.InvalidArgumentError):
        tiny.transcribe([0.0] * 16, task="summarize")


def test_pickles_by_path_and_reopens(tiny_kes):
    model = kestrel.Model(tiny_kes, n_threads=1, context_length=64)
    data = pickle.dumps(model)
    assert len(data) < 1024  # the path and options, never the weights
    again = pickle.loads(data)
    assert again is not model and again.path == model.path
    assert again.generate(PROMPT, max_tokens=12, temperature=0) == model.generate(
        PROMPT, max_tokens=12, temperature=0
    )
    assert pickle.loads(pickle.dumps(model))._options == model._options


def test_close(tiny_kes):
    with kestrel.Model(tiny_kes, n_threads=1) as model:
        stream = model.generate(PROMPT, max_tokens=8, temperature=0, stream=True)
        first = next(stream)
    # A stream under way keeps what it uses; new calls are refused.
    assert first + "".join(stream) != ""
    with pytest.raises(kestrel.InvalidArgumentError, match="closed"):
        model.tokenize(PROMPT)


def test_the_gil_is_released_while_generating(tiny_kes):
    # One call into the library (kes_generate) long enough to watch: 4000 tokens (the tiny
    # model runs past its context with attention sinks; its greedy text has no end token).
    # Were the GIL held, the counting thread could not run inside the call at all, so a few
    # counts prove it was released; a loaded machine may give that thread little time.
    model = kestrel.Model(tiny_kes, n_threads=1)
    model.generate(PROMPT, max_tokens=1)  # the session is made before the timing
    ticks, seconds = ticks_during(
        lambda: model.generate(PROMPT, max_tokens=4000, temperature=0)
    )
    assert seconds > 0.04, "the call is too short to tell"
    assert ticks > 10, (ticks, seconds)


def test_every_status_code_has_its_class():
    from kestrel import _kestrel
    from kestrel._errors import error_for

    for code in range(1, 11):
        error = error_for(code, "m")
        assert type(error) is not kestrel.KestrelError and error.code == code
        assert error.status == _kestrel.status_name(code)
        assert getattr(kestrel, type(error).__name__) is type(error)
    unknown = error_for(99, "from a newer library")
    assert type(unknown) is kestrel.KestrelError and unknown.code == 99


def test_session_state_round_trips_through_the_extension(tiny, tmp_path):
    # kestrel._kestrel's save/load bindings: a state restored into another session goes on
    # with the tokens the first one gives.
    from kestrel import _kestrel

    ids = tiny.tokenize(PROMPT)
    a = _kestrel.SessionHandle(tiny._model(), 64, 1, 0)
    b = _kestrel.SessionHandle(tiny._model(), 64, 1, 0)
    a.prefill(ids)
    state = a.save_state()
    a.save_state_file(str(tmp_path / "state.bin"))
    greedy = (0.0, 40, 0.95, 0)
    expected = [a.next_token(*greedy)[0] for _ in range(8)]
    for load in (lambda: b.load_state(state),
                 lambda: b.load_state_file(str(tmp_path / "state.bin"))):
        load()
        assert b.position() == len(ids)
        assert [b.next_token(*greedy)[0] for _ in range(8)] == expected
    with pytest.raises(kestrel.BadStateError):
        b.load_state(state[:-1])
