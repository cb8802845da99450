"""Kestrel from Python: convert models, generate text, embed, transcribe.

    import kestrel
    kestrel.convert("gemma-3-270m-q4_k_m.gguf", "gemma.kes")
    model = kestrel.Model("gemma.kes", n_threads=4)
    print(model.generate("The capital of France is", temperature=0, max_tokens=16))
    for piece in model.generate("Once upon a time", stream=True):
        print(piece, end="", flush=True)

Built on Kestrel's C API (include/kestrel/kestrel.h), linked into the extension statically.
Failures raise KestrelError subclasses carrying the C API's status code and message.
"""

from . import _errors
from ._errors import (
    AbortedError,
    BadModelError,
    BadStateError,
    BufferTooSmallError,
    ContextFullError,
    InternalError,
    InvalidArgumentError,
    KestrelError,
    KestrelIOError,
    KestrelMemoryError,
    UnsupportedError,
)
from ._model import Chat, Model, Segment, Transcript, convert, version

__version__ = version()

__all__ = ["Chat", "Model", "Segment", "Transcript", "convert", "version"]
__all__ += _errors.__all__
