"""kestrel.Model and kestrel.convert: the typed Python face of the C API's extension."""

from __future__ import annotations

import codecs
import contextlib
import os
import queue
import threading
from typing import (
    Any,
    Callable,
    Dict,
    Iterator,
    List,
    Mapping,
    NamedTuple,
    Optional,
    Sequence,
    Tuple,
    Union,
    overload,
)

from typing import Literal

import numpy as np

from . import _kestrel
from ._errors import ContextFullError, InvalidArgumentError

__all__ = ["Chat", "Model", "Segment", "Transcript", "convert", "version"]

PathLike = Union[str, "os.PathLike[str]"]

_KV_TYPES = {"f16": 0, "f32": 1, "int8": 2}


def version() -> str:
    """The Kestrel library's version, as ``kestrel --version`` prints it ("0.1.0")."""
    return _kestrel.version()


def convert(
    src: PathLike,
    dst: PathLike,
    weights: Optional[str] = None,
    *,
    calibration: Optional[str] = None,
    prefill_tokens: int = 0,
    score_tokens: int = 0,
    max_seq_length: int = 0,
    max_batch: int = 0,
    step_tokens: int = 0,
) -> None:
    """Convert a GGUF file or a Hugging Face / CTranslate2 checkpoint folder to a .kes file.

    The same bytes as ``kestrel-convert src dst --weights WEIGHTS``. ``weights`` is one of
    "keep", "f32", "f16", "bf16", "q8", "q4", "q4_k_m", "q4_k", "q5_k", "q6_k" (the K-quant ones
    for GGUF input); None keeps a quantized GGUF file's types (and a checkpoint's), f32 for any
    other GGUF file. ``dst`` is replaced only once the new file is complete and verified; on
    failure nothing is written. The other options are kestrel-convert's flags of the same names
    (0: the converter's default). The GIL is released while converting.

    Raises InvalidArgumentError (a bad option, ``dst`` the same file as ``src``), KestrelIOError
    (an input that cannot be read, an output that cannot be written), BadModelError (an input
    that is not a model), UnsupportedError (an architecture Kestrel does not know).
    """
    _kestrel.convert(
        os.fspath(src),
        os.fspath(dst),
        weights,
        calibration,
        prefill_tokens,
        score_tokens,
        max_seq_length,
        max_batch,
        step_tokens,
    )


class Segment(NamedTuple):
    """A piece of a transcript: its times in seconds from the start of the recording, its text
    (as ``kestrel transcribe`` prints it) and its token ids (timestamps included when on)."""

    start: float
    end: float
    text: str
    tokens: List[int]


class Transcript(List[Segment]):
    """The segments of a transcription, in order, with the ``language`` code (given, detected,
    or "en" for an English-only model); ``text`` is their texts joined."""

    language: str

    def __init__(self, segments: Sequence[Segment], language: str) -> None:
        super().__init__(segments)
        self.language = language

    @property
    def text(self) -> str:
        return "".join(s.text for s in self)


_TASKS = {"transcribe": 0, "translate": 1}

Sampler = Tuple[float, int, float, int]


def _decoded(pieces: Iterator[bytes]) -> Iterator[str]:
    """UTF-8 pieces as whole characters (a character split across tokens comes out once
    complete); bytes that are not UTF-8 become U+FFFD, as in the non-streamed text."""
    decoder = codecs.getincrementaldecoder("utf-8")(errors="replace")
    try:
        for piece in pieces:
            text = decoder.decode(piece)
            if text:
                yield text
        tail = decoder.decode(b"", final=True)
        if tail:
            yield tail
    finally:
        close = getattr(pieces, "close", None)
        if close is not None:
            close()  # a stream left early gives its session back now


def _sampler(temperature: float, top_k: int, top_p: float, seed: int) -> Sampler:
    return (float(temperature), int(top_k), float(top_p), int(seed))


def _check_max_tokens(max_tokens: int) -> None:
    if max_tokens < 0:
        raise InvalidArgumentError(f"max_tokens: expected 0 or more, found {max_tokens}")


def _callback_pieces(run: Callable[[Callable[[bytes], bool]], Any]) -> Iterator[bytes]:
    """The pieces a callback-style call (kes_session_chat) hands over, as an iterator: the call
    runs on a worker thread (the GIL released inside the library, taken back only to hand a
    piece over); leaving the loop early stops it after the token under way."""
    pieces: "queue.Queue[Optional[bytes]]" = queue.Queue()
    stop = threading.Event()
    failure: List[BaseException] = []

    def on_piece(piece: bytes) -> bool:
        pieces.put(piece)
        return stop.is_set()

    def work() -> None:
        try:
            run(on_piece)
        except BaseException as e:  # raised again on the consumer's thread
            failure.append(e)
        finally:
            pieces.put(None)

    worker = threading.Thread(target=work, name="kestrel-chat", daemon=True)
    worker.start()
    try:
        while True:
            piece = pieces.get()
            if piece is None:
                break
            yield piece
        if failure:
            raise failure[0]
    finally:
        stop.set()
        worker.join()


def _open_model(path: str, options: Dict[str, Any]) -> "Model":
    """Unpickling: the model is opened again from its path (the file must be there)."""
    return Model(path, **options)


def _expect_strings(values: List[Any], name: str) -> None:
    """InvalidArgumentError naming the first item of ``values`` that is not a str."""
    for i, value in enumerate(values):
        if not isinstance(value, str):
            raise InvalidArgumentError(
                f"{name}[{i}]: expected a str, found {type(value).__name__}"
            )


class Model:
    """A .kes model, opened (memory-mapped, read in place) from ``path``.

    One Model may be used from any number of threads at once: the weights are shared, and each
    call runs in a session (KV cache and activations) of its own, kept for the next call, so
    threads never wait for each other. Every call into the library releases the GIL.

    ``n_threads``: threads per call (0: one per physical core available). ``context_length``:
    tokens a generation may hold (0: the model's own; more than the model's is lowered to it).
    ``kv_type``: the KV cache's type, "f16" (default), "f32" or "int8", as ``kestrel run
    --kv-type``. ``verify_weights``: hash the weights against their checksum on opening (None:
    as the KESTREL_VERIFY_WEIGHTS environment variable says).

    A Model pickles as its path and options and is opened again on unpickling, never
    serialised: send it to worker processes (multiprocessing, Ray) freely, the file must be
    readable there at the same path.
    """

    def __init__(
        self,
        path: PathLike,
        *,
        n_threads: int = 0,
        context_length: int = 4096,
        kv_type: str = "f16",
        verify_weights: Optional[bool] = None,
    ) -> None:
        if kv_type not in _KV_TYPES:
            raise InvalidArgumentError(
                f"kv_type: expected one of {', '.join(_KV_TYPES)}, found {kv_type!r}"
            )
        if n_threads < 0 or context_length < 0:
            raise InvalidArgumentError(
                "n_threads and context_length: expected counts of 0 or more, found "
                f"{n_threads} and {context_length}"
            )
        self._path = os.fspath(path)
        self._options: Dict[str, Any] = {
            "n_threads": n_threads,
            "context_length": context_length,
            "kv_type": kv_type,
            "verify_weights": verify_weights,
        }
        verify = -1 if verify_weights is None else int(bool(verify_weights))
        self._handle: Optional[_kestrel.ModelHandle] = _kestrel.ModelHandle(self._path, verify)
        self._info: Dict[str, Any] = self._handle.info()
        # Handles kept for the next call, one per thread at once at most (kestrel._kestrel's
        # handles refuse a second thread): sessions, encoders and transcribers.
        self._idle: Dict[type, List[Any]] = {}
        self._lock = threading.Lock()

    # ---- the model ---------------------------------------------------------------------------

    @property
    def path(self) -> str:
        """The file the model was opened from."""
        return self._path

    @property
    def n_vocab(self) -> int:
        """Tokens in the vocabulary."""
        return int(self._info["n_vocab"])

    @property
    def trained_context_length(self) -> int:
        """The context the model was trained for, in tokens."""
        return int(self._info["context_length"])

    @property
    def can_generate(self) -> bool:
        """True for a text decoder (generate, chat); False for an encoder or Whisper."""
        return bool(self._info["can_generate"])

    def close(self) -> None:
        """Releases the model and its sessions now rather than when garbage collected.

        A stream still running keeps what it uses until it ends. Calls after close raise
        InvalidArgumentError.
        """
        with self._lock:
            self._idle.clear()
        self._handle = None

    def __enter__(self) -> "Model":
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    def __reduce__(self):
        return (_open_model, (self._path, dict(self._options)))

    def __repr__(self) -> str:
        return f"kestrel.Model({self._path!r})"

    def _model(self) -> "_kestrel.ModelHandle":
        handle = self._handle
        if handle is None:
            raise InvalidArgumentError(f"the model {self._path!r} is closed")
        return handle

    # ---- tokens ------------------------------------------------------------------------------

    def tokenize(
        self, text: str, *, add_special: bool = True, parse_special: bool = True
    ) -> List[int]:
        """The token ids of ``text``, as ``kestrel tokenize --ids`` prints them.

        ``add_special``: BOS (and EOS) where the vocabulary asks for them (``--no-bos``
        turns it off in the CLI). ``parse_special``: control tokens written in the text
        ("<start_of_turn>") become their ids; otherwise they are plain text.
        """
        flags = (_kestrel.TOKENIZE_ADD_SPECIAL if add_special else 0) | (
            _kestrel.TOKENIZE_PARSE_SPECIAL if parse_special else 0
        )
        return self._model().tokenize(text, flags)

    def detokenize(self, ids: Sequence[int]) -> str:
        """The text of token ``ids`` (invalid UTF-8, as a lone byte token, becomes U+FFFD)."""
        return self._model().detokenize(list(ids)).decode("utf-8", errors="replace")

    # ---- generation --------------------------------------------------------------------------

    def _acquire(self, kind: type = _kestrel.SessionHandle) -> Any:
        model = self._model()
        with self._lock:
            idle = self._idle.get(kind)
            if idle:
                return idle.pop()
        n_threads = self._options["n_threads"]
        if kind is _kestrel.EncoderHandle:
            return _kestrel.EncoderHandle(model, n_threads)
        if kind is _kestrel.TranscriberHandle:
            return _kestrel.TranscriberHandle(model, n_threads, 0)
        return _kestrel.SessionHandle(
            model,
            self._options["context_length"],
            n_threads,
            _KV_TYPES[self._options["kv_type"]],
        )

    def _release(self, handle: Any) -> None:
        if self._handle is None:
            return
        with self._lock:
            self._idle.setdefault(type(handle), []).append(handle)

    @contextlib.contextmanager
    def _borrowed(self, kind: type = _kestrel.SessionHandle) -> Iterator[Any]:
        """A handle of ``kind`` for one call, kept for the next once the call is done."""
        handle = self._acquire(kind)
        try:
            yield handle
        finally:
            self._release(handle)

    def _prompt_ids(self, prompt: Union[str, Sequence[int]]) -> List[int]:
        if isinstance(prompt, str):
            return self.tokenize(prompt)
        return [int(t) for t in prompt]

    @overload
    def generate(
        self,
        prompt: Union[str, Sequence[int]],
        *,
        max_tokens: int = ...,
        temperature: float = ...,
        top_k: int = ...,
        top_p: float = ...,
        seed: int = ...,
        stream: Literal[False] = ...,
    ) -> str: ...

    @overload
    def generate(
        self,
        prompt: Union[str, Sequence[int]],
        *,
        max_tokens: int = ...,
        temperature: float = ...,
        top_k: int = ...,
        top_p: float = ...,
        seed: int = ...,
        stream: Literal[True],
    ) -> Iterator[str]: ...

    def generate(
        self,
        prompt: Union[str, Sequence[int]],
        *,
        max_tokens: int = 128,
        temperature: float = 0.8,
        top_k: int = 40,
        top_p: float = 0.95,
        seed: int = 0,
        stream: bool = False,
    ) -> Union[str, Iterator[str]]:
        """Continue ``prompt`` by up to ``max_tokens`` tokens, stopping at an end token.

        The prompt is tokenized as ``kestrel run -p`` does (BOS, control tokens recognised), or
        given as token ids. Sampling is ``kestrel run``'s, with its defaults; temperature 0 is
        greedy and gives exactly ``kestrel run --temp 0``'s text (same threads and KV type).
        Each call starts afresh from the prompt.

        stream=False returns the generated text. stream=True returns an iterator of its pieces
        as they are generated (whole UTF-8 characters; the same text when joined), each token
        computed with the GIL released; stop early by leaving the loop (or closing the
        iterator). A stream can be interrupted (Ctrl-C) between tokens; a call without stream
        returns only when done. Raises ContextFullError when the prompt is longer than the
        context.
        """
        _check_max_tokens(max_tokens)
        ids = self._prompt_ids(prompt)
        sampler = _sampler(temperature, top_k, top_p, seed)
        if stream:
            # As kes_generate refuses it (prefill alone would slide past the context).
            context = min(self._options["context_length"] or self.trained_context_length,
                          self.trained_context_length)
            if len(ids) > context:
                raise ContextFullError(
                    f"the prompt is {len(ids)} tokens, more than the context of {context} "
                    "tokens (context_length)"
                )
            return _decoded(self._stream(ids, max_tokens, sampler))
        with self._borrowed() as session:
            session.reset()
            _, text = session.generate(ids, max_tokens, *sampler)
        return text.decode("utf-8", errors="replace")

    def _stream(self, ids: List[int], max_tokens: int, sampler: Sampler) -> Iterator[bytes]:
        """Pull-style: one kes_session_next_token per piece, the GIL released for each."""
        with self._borrowed() as session:
            session.reset()
            session.prefill(ids)
            for _ in range(max_tokens):
                _, piece, is_end = session.next_token(*sampler)
                if is_end:
                    break
                yield piece

    # ---- chat --------------------------------------------------------------------------------

    def chat_template(
        self,
        messages: Sequence[Mapping[str, str]],
        *,
        add_generation_prompt: bool = True,
        template: Optional[str] = None,
    ) -> str:
        """``messages`` ({"role": "system" | "user" | "assistant", "content": ...}) written as
        the model's chat template writes them (``template``: None for the model's own, or a
        built-in "gemma", "chatml", "llama3"), ending with the assistant's turn opened."""
        pairs = _message_pairs(messages)
        text = self._model().chat_template(pairs, template, bool(add_generation_prompt))
        return text.decode("utf-8", errors="replace")

    @overload
    def chat(
        self,
        messages: Sequence[Mapping[str, str]],
        *,
        max_tokens: int = ...,
        temperature: float = ...,
        top_k: int = ...,
        top_p: float = ...,
        seed: int = ...,
        template: Optional[str] = ...,
        stream: Literal[False] = ...,
    ) -> str: ...

    @overload
    def chat(
        self,
        messages: Sequence[Mapping[str, str]],
        *,
        max_tokens: int = ...,
        temperature: float = ...,
        top_k: int = ...,
        top_p: float = ...,
        seed: int = ...,
        template: Optional[str] = ...,
        stream: Literal[True],
    ) -> Iterator[str]: ...

    def chat(
        self,
        messages: Sequence[Mapping[str, str]],
        *,
        max_tokens: int = 512,
        temperature: float = 0.8,
        top_k: int = 40,
        top_p: float = 0.95,
        seed: int = 0,
        template: Optional[str] = None,
        stream: bool = False,
    ) -> Union[str, Iterator[str]]:
        """The assistant's reply to a conversation, written by the model's chat template.

        ``messages``: {"role": "system" | "user" | "assistant", "content": ...} dicts (an
        OpenAI-style history), ending with a user message. The whole history is written out and
        prefilled each call; for a conversation held turn by turn (each turn prefilling only
        its new text, as ``kestrel chat`` does) use start_chat. Sampling and streaming as
        generate; the first turn gives ``kestrel chat``'s reply.
        """
        _check_max_tokens(max_tokens)
        text = self.chat_template(messages, template=template)
        ids = self.tokenize(text, add_special=False)
        bos = int(self._info["bos_id"])
        if bos >= 0 and (not ids or ids[0] != bos):
            # The template did not write the BOS; the vocabulary adds it where it asks for one.
            ids = self.tokenize(text)
        return self.generate(
            ids,
            max_tokens=max_tokens,
            temperature=temperature,
            top_k=top_k,
            top_p=top_p,
            seed=seed,
            stream=stream,  # type: ignore[call-overload]
        )

    def start_chat(
        self,
        system: Optional[str] = None,
        *,
        template: Optional[str] = None,
        thinking: Optional[bool] = None,
    ) -> "Chat":
        """A conversation held turn by turn in a session of its own, as ``kestrel chat`` holds
        it (the same replies at temperature 0, with the same threads and KV type): see Chat.
        ``thinking``: the template's enable_thinking (Qwen3, SmolLM3); False is ``kestrel chat
        --no-think``, None the template's default."""
        return Chat(self, system, template, thinking)

    # ---- encoders ----------------------------------------------------------------------------

    @property
    def embedding_dim(self) -> int:
        """Floats per embedding (encoder models; UnsupportedError for others)."""
        with self._borrowed(_kestrel.EncoderHandle) as encoder:
            return int(encoder.info()["embedding_dim"])

    @overload
    def embed(self, texts: str) -> np.ndarray: ...

    @overload
    def embed(self, texts: Sequence[str]) -> np.ndarray: ...

    def embed(self, texts: Union[str, Sequence[str]]) -> np.ndarray:
        """The embeddings of ``texts`` with an encoder model (all-MiniLM-L6-v2 and other BERT
        sentence encoders), as ``kestrel embed`` computes them, bit for bit: pooled and
        normalised as the checkpoint's pipeline says, texts longer than the model's limit cut.

        A list of n texts gives a float32 array of shape (n, dim); one string gives shape
        (dim,). The library writes the rows straight into the returned array (no copy), with
        the GIL released. UnsupportedError for a model that is not an encoder.
        """
        single = isinstance(texts, str)
        batch = [texts] if single else list(texts)
        _expect_strings(batch, "texts")
        with self._borrowed(_kestrel.EncoderHandle) as encoder:
            dim = int(encoder.info()["embedding_dim"])
            out = np.empty((len(batch), dim), dtype=np.float32)
            if batch:
                encoder.embed(batch, out)
        return out[0] if single else out

    def rerank(self, query: str, documents: Sequence[str]) -> np.ndarray:
        """The relevance logit of each ``(query, document)`` pair with a reranker (a
        cross-encoder such as bge-reranker or an ms-marco cross-encoder), as ``kestrel rerank
        --json`` gives them, bit for bit: a float32 array of shape (len(documents),). Higher
        is more relevant; ``1 / (1 + exp(-logit))`` is the score sentence-transformers'
        CrossEncoder prints. UnsupportedError for a model that embeds instead.
        """
        if not isinstance(query, str):
            raise InvalidArgumentError(f"query: expected a str, found {type(query).__name__}")
        docs = list(documents)
        _expect_strings(docs, "documents")
        with self._borrowed(_kestrel.EncoderHandle) as encoder:
            out = np.empty((len(docs),), dtype=np.float32)
            if docs:
                encoder.rerank(query, docs, out)
        return out

    # ---- speech ------------------------------------------------------------------------------

    def transcribe(
        self,
        audio: Union[PathLike, np.ndarray, Sequence[float]],
        *,
        sample_rate: int = 16000,
        language: Optional[str] = None,
        task: str = "transcribe",
        timestamps: bool = False,
        previous_text: bool = False,
    ) -> Transcript:
        """Speech to text with a Whisper model, as ``kestrel transcribe`` decodes it (the same
        text and times: faster-whisper's greedy decoding).

        ``audio``: a WAV file's path (any rate; channels averaged), or mono samples in [-1, 1]
        at ``sample_rate`` Hz (resampled to 16 kHz when not). ``language``: "en", "de", ...;
        None detects it from the first 30 seconds. ``task``: "transcribe" or "translate" (to
        English). ``timestamps``: segments cut at Whisper's timestamps. ``previous_text``: the
        text so far as the prompt of each next 30-second window. Returns the segments (a list
        of Segment, with ``.language`` and ``.text``); the GIL is released while it runs.
        """
        if task not in _TASKS:
            raise InvalidArgumentError(
                f"task: expected transcribe or translate, found {task!r}"
            )
        args = (language, _TASKS[task], bool(timestamps), bool(previous_text))
        with self._borrowed(_kestrel.TranscriberHandle) as transcriber:
            if isinstance(audio, (str, os.PathLike)):
                raw, code = transcriber.transcribe_file(os.fspath(audio), *args)
            else:
                samples = np.ascontiguousarray(audio, dtype=np.float32)
                if samples.ndim != 1:
                    raise InvalidArgumentError(
                        f"audio: expected mono samples (one dimension), found shape "
                        f"{samples.shape}"
                    )
                raw, code = transcriber.transcribe_pcm(samples, int(sample_rate), *args)
        segments = [
            Segment(start, end, text.decode("utf-8", errors="replace"), list(tokens))
            for start, end, text, tokens in raw
        ]
        return Transcript(segments, code)


def _message_pairs(messages: Sequence[Mapping[str, str]]) -> List[Tuple[str, str]]:
    pairs = []
    for i, m in enumerate(messages):
        try:
            pairs.append((str(m["role"]), str(m["content"])))
        except (KeyError, TypeError):
            raise InvalidArgumentError(
                f"messages[{i}]: expected a dict with 'role' and 'content', found {m!r}"
            ) from None
    return pairs


class Chat:
    """A conversation with a text decoder, turn by turn (Model.start_chat).

    Each send() writes the conversation with the new user turn as the model's template does,
    prefills only the text the session does not hold yet, and generates the reply, which stays
    in the conversation. Replies equal ``kestrel chat``'s for the same turns at temperature 0.
    ``history`` holds the messages so far. A Chat is used by one thread at a time; its session
    is its own until close() (or the end of a ``with`` block) gives it back to the model.
    """

    def __init__(
        self,
        model: Model,
        system: Optional[str],
        template: Optional[str],
        thinking: Optional[bool] = None,
    ) -> None:
        self._model = model
        self._session: Optional[Any] = model._acquire()
        self.history: List[Dict[str, str]] = []
        try:
            self._session.reset()
            self._session.chat_start(system, template, thinking)
        except BaseException:
            self.close()
            raise
        if system is not None:
            self.history.append({"role": "system", "content": system})

    def _handle(self) -> Any:
        if self._session is None:
            raise InvalidArgumentError("this chat is closed")
        return self._session

    @overload
    def send(
        self,
        user: str,
        *,
        max_tokens: int = ...,
        temperature: float = ...,
        top_k: int = ...,
        top_p: float = ...,
        seed: int = ...,
        stream: Literal[False] = ...,
    ) -> str: ...

    @overload
    def send(
        self,
        user: str,
        *,
        max_tokens: int = ...,
        temperature: float = ...,
        top_k: int = ...,
        top_p: float = ...,
        seed: int = ...,
        stream: Literal[True],
    ) -> Iterator[str]: ...

    def send(
        self,
        user: str,
        *,
        max_tokens: int = 512,
        temperature: float = 0.8,
        top_k: int = 40,
        top_p: float = 0.95,
        seed: int = 0,
        stream: bool = False,
    ) -> Union[str, Iterator[str]]:
        """Adds the user's turn and returns the assistant's reply (stream=True: an iterator of
        its pieces; leaving it early keeps the reply so far in the conversation).
        ContextFullError when the turn's new text is longer than the context."""
        _check_max_tokens(max_tokens)
        session = self._handle()
        sampler = _sampler(temperature, top_k, top_p, seed)
        self.history.append({"role": "user", "content": user})
        if not stream:
            _, text = session.chat(user, max_tokens, *sampler, None)
            reply = text.decode("utf-8", errors="replace")
            self.history.append({"role": "assistant", "content": reply})
            return reply
        return self._stream(session, user, max_tokens, sampler)

    def _stream(self, session: Any, user: str, max_tokens: int, sampler: Sampler) -> Iterator[str]:
        done: List[bytes] = []  # the whole reply, as the session holds it, once the turn ends

        def run(on_piece: Callable[[bytes], bool]) -> None:
            done.append(session.chat(user, max_tokens, *sampler, on_piece)[1])

        texts = _decoded(_callback_pieces(run))
        shown: List[str] = []
        try:
            for text in texts:
                shown.append(text)
                yield text
        finally:
            texts.close()  # stops the turn when left early, and waits for its end
            reply = done[0].decode("utf-8", errors="replace") if done else "".join(shown)
            self.history.append({"role": "assistant", "content": reply})

    def close(self) -> None:
        """Gives the session back to the model; later sends raise InvalidArgumentError."""
        session, self._session = self._session, None
        if session is not None:
            self._model._release(session)

    def __enter__(self) -> "Chat":
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()
