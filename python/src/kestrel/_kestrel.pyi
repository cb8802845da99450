"""Types of the extension module (python/src/_kestrel.cc); use the kestrel package instead."""

from typing import Any, Callable, Dict, List, Optional, Tuple

import numpy as np

TOKENIZE_ADD_SPECIAL: int
TOKENIZE_PARSE_SPECIAL: int
ABI_VERSION: int

def version() -> str: ...
def abi_version() -> int: ...
def status_name(status: int) -> str: ...
def convert(
    src: str,
    dst: str,
    weights: Optional[str] = None,
    calibration: Optional[str] = None,
    prefill_tokens: int = 0,
    score_tokens: int = 0,
    max_seq_length: int = 0,
    max_batch: int = 0,
    step_tokens: int = 0,
) -> None: ...

class ModelHandle:
    def __init__(self, path: str, verify_weights: int = -1) -> None: ...
    def info(self) -> Dict[str, Any]: ...
    def tokenize(self, text: str, flags: int) -> List[int]: ...
    def detokenize(self, ids: List[int]) -> bytes: ...
    def chat_template(
        self,
        messages: List[Tuple[str, str]],
        format: Optional[str],
        add_generation_prompt: bool,
    ) -> bytes: ...
    def is_end(self, token: int) -> bool: ...

class SessionHandle:
    def __init__(
        self, model: ModelHandle, context_length: int, n_threads: int, kv_type: int
    ) -> None: ...
    def reset(self) -> None: ...
    def abort(self) -> None: ...
    def position(self) -> int: ...
    def prefill(self, ids: List[int]) -> None: ...
    def next_token(
        self, temperature: float, top_k: int, top_p: float, seed: int
    ) -> Tuple[int, bytes, bool]: ...
    def chat_start(self, system: Optional[str], format: Optional[str]) -> None: ...
    def chat(
        self,
        user: str,
        max_tokens: int,
        temperature: float,
        top_k: int,
        top_p: float,
        seed: int,
        on_piece: Optional[Callable[[bytes], bool]],
    ) -> Tuple[List[int], bytes]: ...
    def save_state(self) -> bytes: ...
    def load_state(self, state: bytes) -> None: ...
    def save_state_file(self, path: str) -> None: ...
    def load_state_file(self, path: str) -> None: ...
    def generate(
        self,
        prompt: List[int],
        max_tokens: int,
        temperature: float,
        top_k: int,
        top_p: float,
        seed: int,
    ) -> Tuple[List[int], bytes]: ...

class EncoderHandle:
    def __init__(self, model: ModelHandle, n_threads: int) -> None: ...
    def info(self) -> Dict[str, Any]: ...
    def embed(self, texts: List[str], out: np.ndarray) -> None: ...
    def tokenize(self, text: str) -> List[int]: ...

_RawSegment = Tuple[float, float, bytes, List[int]]

class TranscriberHandle:
    def __init__(self, model: ModelHandle, n_threads: int, max_audio_seconds: int) -> None: ...
    def transcribe_pcm(
        self,
        samples: np.ndarray,
        sample_rate: int,
        language: Optional[str],
        task: int,
        timestamps: bool,
        previous_text: bool,
    ) -> Tuple[List[_RawSegment], str]: ...
    def transcribe_file(
        self,
        path: str,
        language: Optional[str],
        task: int,
        timestamps: bool,
        previous_text: bool,
    ) -> Tuple[List[_RawSegment], str]: ...
