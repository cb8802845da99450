"""The exceptions of the kestrel package: one class per kes_status code of the C API.

``__all__`` is what the package exports (kestrel/__init__.py adds it to its own); error_for is
the extension's (python/src/_kestrel.cc), not the package's."""

from __future__ import annotations

__all__ = [
    "KestrelError",
    "InvalidArgumentError",
    "KestrelIOError",
    "BadModelError",
    "UnsupportedError",
    "BufferTooSmallError",
    "ContextFullError",
    "KestrelMemoryError",
    "AbortedError",
    "InternalError",
    "BadStateError",
]


class KestrelError(Exception):
    """A call into Kestrel failed.

    ``code`` is the C API's kes_status value (an int; ``status`` its name, such as
    ``"KES_BAD_MODEL"``) and ``message`` the library's explanation, which is also ``str(error)``.
    Catch a subclass to branch on the kind of failure.
    """

    code: int = -1
    status: str = "KES_UNKNOWN"

    def __init__(self, message: str, code: int | None = None) -> None:
        super().__init__(message)
        self.message = message
        if code is not None:
            self.code = code

    def __str__(self) -> str:
        return self.message

    def __reduce__(self):  # picklable (multiprocessing, Ray) with its code
        if type(self).code == self.code:
            return (type(self), (self.message,))
        return (type(self), (self.message, self.code))


class InvalidArgumentError(KestrelError, ValueError):
    """KES_INVALID_ARGUMENT: an out-of-range value, a call in the wrong order."""

    code, status = 1, "KES_INVALID_ARGUMENT"


class KestrelIOError(KestrelError, OSError):
    """KES_IO_ERROR: a file that cannot be opened, read or written."""

    code, status = 2, "KES_IO_ERROR"


class BadModelError(KestrelError):
    """KES_BAD_MODEL: a file that is not a valid model (or, for convert, a valid input)."""

    code, status = 3, "KES_BAD_MODEL"


class UnsupportedError(KestrelError):
    """KES_UNSUPPORTED: a valid model of the wrong kind for the call, an unknown architecture."""

    code, status = 4, "KES_UNSUPPORTED"


class BufferTooSmallError(KestrelError):
    """KES_BUFFER_TOO_SMALL (the package sizes its buffers itself; seen only on a bug)."""

    code, status = 5, "KES_BUFFER_TOO_SMALL"


class ContextFullError(KestrelError):
    """KES_CONTEXT_FULL: a prompt longer than the session's context."""

    code, status = 6, "KES_CONTEXT_FULL"


class KestrelMemoryError(KestrelError, MemoryError):
    """KES_OUT_OF_MEMORY."""

    code, status = 7, "KES_OUT_OF_MEMORY"


class AbortedError(KestrelError):
    """KES_ABORTED: the call was stopped by an abort request."""

    code, status = 8, "KES_ABORTED"


class InternalError(KestrelError):
    """KES_INTERNAL: a bug in Kestrel; please report the message."""

    code, status = 9, "KES_INTERNAL"


class BadStateError(KestrelError):
    """KES_BAD_STATE: a saved session state that is damaged, cut short, of another format
    version, or saved by another model or a session of other parameters."""

    code, status = 10, "KES_BAD_STATE"


_BY_CODE: dict[int, type[KestrelError]] = {
    cls.code: cls
    for cls in (
        InvalidArgumentError,
        KestrelIOError,
        BadModelError,
        UnsupportedError,
        BufferTooSmallError,
        ContextFullError,
        KestrelMemoryError,
        AbortedError,
        InternalError,
        BadStateError,
    )
}


def error_for(code: int, message: str) -> KestrelError:
    """The exception for a failed call's kes_status ``code`` (the extension raises it)."""
    cls = _BY_CODE.get(code)
    if cls is None:
        return KestrelError(message, code)
    return cls(message)
