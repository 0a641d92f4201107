"""Calling a transformers tokenizer's Rust backend directly, where that gives what the tokenizer gives.

On GPUs the host's work for a batch (tokenizing constraint phrases, detokenizing beams) runs in a
thread that shares the GIL with the decoding thread, and the first batch's is not overlapped at all.
transformers' wrapper spends most of its time in Python around the backend's call (argument
checks, the backend's padding and truncation state, one ``BatchEncoding`` conversion per text):
tokenizing a job's constraint phrases through it took 17 µs a text on this project's CPU, the
backend alone 6 µs. The backend is used only where the tokenizer's class encodes and decodes as
transformers' ``TokenizersBackend`` does (T5, BART, mBART, Pegasus; not Marian's SentencePiece
tokenizer, nor a class that overrides those methods); elsewhere the tokenizer is called.
"""

from __future__ import annotations

import copy
from collections.abc import Callable, Sequence

from transformers import PreTrainedTokenizerFast as TokenizersBackend

#: The methods through which ``tokenizer(texts)`` encodes, and through which ``batch_decode`` decodes.
ENCODERS = ("__call__", "_encode_plus", "encode", "tokenize", "set_truncation_and_padding")
DECODERS = ("batch_decode", "decode", "_decode")


def plain_backend(tokenizer, methods: Sequence[str]):
    """``tokenizer``'s Rust backend (a ``tokenizers.Tokenizer``) when its class is a
    ``TokenizersBackend`` that keeps the base class's ``methods``; else None."""
    kind = type(tokenizer)
    if not isinstance(tokenizer, TokenizersBackend):
        return None
    if any(getattr(kind, name, None) is not getattr(TokenizersBackend, name) for name in methods):
        return None
    return getattr(tokenizer, "backend_tokenizer", None)


def encoder_without_specials(tokenizer) -> Callable[[list[str]], list[list[int]]]:
    """A function giving ``tokenizer(texts, add_special_tokens=False)["input_ids"]``: through a
    private copy of the Rust backend, without padding or truncation, where the class encodes as the
    base class does; else through the tokenizer. The copy is the caller's own, so neither another
    thread nor the wrapper's padding and truncation settings (which it leaves on its backend after a
    padded call) can change what it gives."""
    backend = plain_backend(tokenizer, ENCODERS)
    if backend is None:
        return lambda texts: [list(ids) for ids in tokenizer(texts, add_special_tokens=False)["input_ids"]]
    own = copy.deepcopy(backend)
    own.no_padding()
    own.no_truncation()

    def encode(texts: list[str]) -> list[list[int]]:
        # As the wrapper does: special tokens' text is one token unless the tokenizer splits it.
        own.encode_special_tokens = bool(getattr(tokenizer, "split_special_tokens", False))
        return [enc.ids for enc in own.encode_batch(texts, add_special_tokens=False)]

    return encode


def token_namer(tokenizer) -> Callable[[int], str | None]:
    """A function giving ``tokenizer.convert_ids_to_tokens(id)`` for one id."""
    backend = plain_backend(tokenizer, ("convert_ids_to_tokens",))
    return tokenizer.convert_ids_to_tokens if backend is None else backend.id_to_token


def decode_texts(tokenizer, rows: list[list[int]]) -> list[str]:
    """``tokenizer.batch_decode(rows, skip_special_tokens=True, clean_up_tokenization_spaces=False)``.
    A tokenizer that decodes as transformers' base class does is asked once, through its backend's
    ``decode_batch``, instead of once a row from Python: 20 beams of 256 sentences took 92 ms so on
    this project's CPU, 30 ms at once, host time that on GPUs holds the GIL beside the decoding
    thread."""
    backend = plain_backend(tokenizer, DECODERS)
    if backend is not None:
        return backend.decode_batch(rows, skip_special_tokens=True)
    return tokenizer.batch_decode(rows, skip_special_tokens=True, clean_up_tokenization_spaces=False)
