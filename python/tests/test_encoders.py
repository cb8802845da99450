"""embed and transcribe on tiny random models, against `kestrel embed --json` and
`kestrel transcribe --json`, bit for bit."""

from __future__ import annotations

import json
import wave

import numpy as np
import pytest

import kestrel
from conftest import run, ticks_during

TEXTS = ["hello world", "a longer sentence about a cat on a mat", "x"]


def test_embeddings_equal_kestrel_embed_bit_for_bit(bert_kes, cli):
    model = kestrel.Model(bert_kes, n_threads=1)
    out = model.embed(TEXTS)
    assert out.dtype == np.float32 and out.shape == (len(TEXTS), model.embedding_dim)
    assert out.flags.c_contiguous and out.flags.owndata  # the library wrote it: no copy
    args = [cli, "embed", str(bert_kes), "--json", "-t", "1"]
    for text in TEXTS:
        args += ["-p", text]
    theirs = np.array(json.loads(run(args).stdout)["embeddings"], dtype=np.float32)
    assert out.view(np.uint32).tolist() == theirs.view(np.uint32).tolist()
    # One text gives one row; threads change nothing.
    one = model.embed(TEXTS[1])
    assert one.shape == (model.embedding_dim,)
    assert one.view(np.uint32).tolist() == theirs[1].view(np.uint32).tolist()
    two = kestrel.Model(bert_kes, n_threads=2).embed(TEXTS)
    assert two.view(np.uint32).tolist() == out.view(np.uint32).tolist()
    assert model.embed([]).shape == (0, model.embedding_dim)


def test_embed_refuses_what_is_not_text(bert_kes):
    with pytest.raises(kestrel.InvalidArgumentError, match=r"texts\[1\]"):
        kestrel.Model(bert_kes).embed(["a", 3])


def test_rerank_equals_kestrel_rerank_bit_for_bit(reranker_kes, bert_kes, cli):
    model = kestrel.Model(reranker_kes, n_threads=1)
    logits = model.rerank("the cat", TEXTS)
    assert logits.dtype == np.float32 and logits.shape == (len(TEXTS),)
    args = [cli, "rerank", str(reranker_kes), "-q", "the cat", "--json", "-t", "1"]
    for text in TEXTS:
        args += ["-d", text]
    theirs = np.array(json.loads(run(args).stdout)["logits"], dtype=np.float32)
    assert logits.view(np.uint32).tolist() == theirs.view(np.uint32).tolist()
    assert model.rerank("q", []).shape == (0,)
    # Each kind of encoder refuses the other's call, naming the right one.
    with pytest.raises(kestrel.UnsupportedError, match="kes_rerank"):
        model.embed(TEXTS)
    with pytest.raises(kestrel.UnsupportedError, match="kes_embed"):
        kestrel.Model(bert_kes).rerank("the cat", TEXTS)


def _cli_segments(cli, kes, wav):
    out = json.loads(run([cli, "transcribe", str(kes), str(wav), "--json", "-t", "1"]).stdout)
    return out


def test_transcripts_equal_kestrel_transcribe(whisper_kes, tone_wav, cli):
    model = kestrel.Model(whisper_kes, n_threads=1)
    theirs = _cli_segments(cli, whisper_kes, tone_wav)
    ours = model.transcribe(tone_wav)
    assert ours.language == theirs["language"]
    assert ours.text == theirs["text"]
    assert len(ours) == len(theirs["segments"]) > 0
    for seg, ref in zip(ours, theirs["segments"]):
        assert isinstance(seg, kestrel.Segment)
        assert (round(seg.start, 2), round(seg.end, 2)) == (ref["start"], ref["end"])
        assert seg.text == ref["text"] and seg.tokens == ref["tokens"]
    # The same recording as samples.
    with wave.open(str(tone_wav)) as w:
        pcm = np.frombuffer(w.readframes(w.getnframes()), dtype="<i2")
    samples = pcm.astype(np.float32) / 32768
    assert model.transcribe(samples) == ours
    assert model.transcribe(samples.tolist(), sample_rate=16000) == ours


def test_transcribe_errors(whisper_kes, tmp_path):
    model = kestrel.Model(whisper_kes, n_threads=1)
    with pytest.raises(kestrel.KestrelIOError, match="missing.wav"):
        model.transcribe(tmp_path / "missing.wav")
    with pytest.raises(kestrel.InvalidArgumentError):
        model.transcribe(np.zeros((2, 100), dtype=np.float32))
    with pytest.raises(kestrel.InvalidArgumentError, match="xx"):
        model.transcribe(np.zeros(1600, dtype=np.float32), language="xx")


def test_abort_stops_the_next_embed_and_transcription(bert_kes, whisper_kes, tone_wav):
    # kestrel._kestrel's abort bindings, as the session's: any thread may call them; a request
    # made before a call stops it at its first step (window), and the call after it works.
    from kestrel import _kestrel

    model = kestrel.Model(bert_kes, n_threads=1)
    encoder = _kestrel.EncoderHandle(model._model(), 1)
    out = np.zeros((len(TEXTS), encoder.info()["embedding_dim"]), dtype=np.float32)
    encoder.abort()
    with pytest.raises(kestrel.AbortedError, match="aborted by kes_encoder_abort"):
        encoder.embed(TEXTS, out)
    encoder.embed(TEXTS, out)
    assert out.view(np.uint32).tolist() == model.embed(TEXTS).view(np.uint32).tolist()

    speech = kestrel.Model(whisper_kes, n_threads=1)
    transcriber = _kestrel.TranscriberHandle(speech._model(), 1, 0)
    transcriber.abort()
    with pytest.raises(kestrel.AbortedError, match="aborted by kes_transcriber_abort"):
        transcriber.transcribe_file(str(tone_wav), None, 0, False, False)
    segments, language = transcriber.transcribe_file(str(tone_wav), None, 0, False, False)
    expected = speech.transcribe(tone_wav)
    assert [s[2].decode("utf-8", errors="replace") for s in segments] == [
        s.text for s in expected
    ]
    assert language == "en"


def test_the_gil_is_released_while_embedding_and_transcribing(bert_kes, whisper_kes):
    # One long call into the library each (kes_embed over 15,000 texts; kes_transcribe_pcm over
    # twenty 30-second windows: 0.4 and 0.6 s on a 2-core Zen 3, well above the 0.04 s needed
    # on faster cores); were the GIL held, the counting thread could not run inside it, so a few
    # counts prove it was released (a loaded machine may give that thread little time).
    encoder = kestrel.Model(bert_kes, n_threads=1)
    encoder.embed(TEXTS)  # the encoder is made before the timing
    ticks, seconds = ticks_during(lambda: encoder.embed(TEXTS * 5000))
    assert seconds > 0.04, "the call is too short to tell"
    assert ticks > 10, (ticks, seconds)

    whisper = kestrel.Model(whisper_kes, n_threads=1)
    t = np.arange(16000 * 600, dtype=np.float32) / 16000
    samples = (0.25 * np.sin(2 * np.pi * (200 + 300 * (t % 3)) * t)).astype(np.float32)
    whisper.transcribe(samples[:16000])  # the transcriber is made before the timing
    ticks, seconds = ticks_during(lambda: whisper.transcribe(samples))
    assert seconds > 0.04, "the call is too short to tell"
    assert ticks > 10, (ticks, seconds)
