"""The paraphrase loop over the decoder interface alone: a decoder that is no model at all."""

from typing import Any

import pytest
import torch

from spanaug.core.config import DecodeSettings
from spanaug.core.engine import EngineRecord
from spanaug.pipeline.paraphraser.decode_loop import paraphrase, paraphrase_chunks
from spanaug.pipeline.paraphraser.decode_stats import DecodeStats
from spanaug.pipeline.paraphraser.paraphrase_decoder import HostTools, ParaphraseDecoder, Prepared, SentenceBeams

#: What the word-swapping decoder writes for a word, best first.
SWAPS = {"bought": ["bought", "purchased", "got"], "big": ["large", "big", "huge"]}


class Words:
    """A whitespace 'tokenizer': a token id per word seen."""

    def __init__(self) -> None:
        self.ids: dict[str, int] = {}

    def __call__(self, texts, **kwargs):
        return {"input_ids": [[self.ids.setdefault(w, len(self.ids)) for w in t.split()] for t in texts]}

    def words(self, ids: list[int]) -> str:
        names = {i: w for w, i in self.ids.items()}
        return " ".join(names[i] for i in ids)


class SwapDecoder(ParaphraseDecoder):
    """Each sentence's 'beams' swap its first swappable word for each of its SWAPS, in order; scored
    by the position of the swap (later swaps score worse) unless ``scores`` says otherwise."""

    backend = "swap"

    def __init__(self) -> None:
        self.tokenizer = Words()
        self.device = torch.device("cpu")
        self.begun = 0

    def generation_config(self) -> Any:
        return None

    def model_config(self) -> Any:
        return type("Config", (), {"eos_token_id": 0})()

    def begin(self, cfg: DecodeSettings) -> None:
        self.begun += 1

    def provenance(self, cfg: DecodeSettings) -> EngineRecord:
        return EngineRecord(self.backend, "nowhere", "words")

    def prepare(self, requests: list[dict[str, Any]], cfg: DecodeSettings, tools: HostTools | None = None) -> Prepared:
        limits = [self.search_spec(cfg).limit(len(r["source_text"].split())) for r in requests]
        return Prepared({"sources": [r["source_text"] for r in requests]}, limits, [[] for _ in requests])

    def decode(self, prepared: Prepared, cfg: DecodeSettings, batch_index: int) -> list[SentenceBeams]:
        return [self._swapped(text, self.search_spec(cfg).width) for text in prepared.enc["sources"]]

    def _swapped(self, text: str, width: int) -> SentenceBeams:
        words = text.split()
        at = next((i for i, w in enumerate(words) if w in SWAPS), None)
        swaps = SWAPS[words[at]][:width] if at is not None else []
        beams = [words[:at] + [s] + words[at + 1 :] for s in swaps] or [words]
        return SentenceBeams(self.tokenizer([" ".join(b) for b in beams])["input_ids"], [0.0] * len(beams))

    def texts(self, beams: list[SentenceBeams], tools: HostTools | None = None) -> list[list[tuple[str, float]]]:
        return [[(self.tokenizer.words(r), sc) for r, sc in zip(s.rows(), s.scores)] for s in beams]

    def score_outputs(self, requests, outputs, cfg):
        return [float(len(o)) for o in outputs]  # shorter is better (a lower NLL)


def _req(text, constraints=()):
    return {"seed_id": text, "source_text": text, "source_tokens": text.split(), "constraints": list(constraints)}


CFG = DecodeSettings(beam_size=3, return_top=2, max_batch_tokens=8)


def test_the_loop_keeps_checks_scores_and_ranks_through_the_interface():
    decoder = SwapDecoder()
    stats = DecodeStats()
    rows = list(paraphrase(decoder, [_req("he bought it", ["bought"]), _req("a big dog")], CFG, stats, progress=False))
    by_seed: dict[str, list[dict]] = {}
    for row in rows:
        by_seed.setdefault(row["seed_id"], []).append(row)
    # "bought" is banned: its beam is dropped and counted; the other two are kept, ranked by score.
    assert [r["paraphrase_text"] for r in by_seed["he bought it"]] == ["he got it", "he purchased it"]
    assert [r["beam_rank"] for r in by_seed["he bought it"]] == [0, 1]
    # return_top 2 of the three beams, the shorter (better) first.
    assert [r["paraphrase_text"] for r in by_seed["a big dog"]] == ["a big dog", "a large dog"]
    assert stats.violations_dropped == 1 and stats.outputs == 4 and stats.requests == 2
    assert stats.engine == EngineRecord("swap", "nowhere", "words") and decoder.begun == 1


def test_chunks_come_back_in_order_and_one_spec_serves_them():
    decoder = SwapDecoder()
    chunks = [[_req("he bought it")], [], [_req("a big dog"), _req("so big")]]
    got = list(paraphrase_chunks(decoder, iter(chunks), CFG, progress=False))
    assert [sorted({r["seed_id"] for r in rows}) for rows in got] == [["he bought it"], [], ["a big dog", "so big"]]
    assert len(decoder.__dict__["_specs"]) == 1


def test_a_decoder_without_an_end_token_fails_before_decoding():
    decoder = SwapDecoder()
    decoder.model_config = lambda: None
    with pytest.raises(Exception, match="no end-of-sequence token"):
        list(paraphrase(decoder, [_req("he bought it")], CFG, progress=False))
    assert decoder.begun == 0  # the spec is built, and refused, before the decoding begins
