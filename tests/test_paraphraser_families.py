"""Model families through the paraphrase stage under constraints, with both backends.

T5, Pegasus and Marian on SentencePiece unigrams (``▁``), BART on byte-level BPE (``Ġ``), and BART
on WordPiece (no word-start marker); random weights, tokenizers trained on the fly.
"""

import dataclasses
import math

import pytest
from conftest import CORPUS

from spanaug.core import artifacts
from spanaug.core.config import DecodeSettings
from spanaug.demo.standins import FAMILIES, save_standin
from spanaug.pipeline.constraints import case_variants, violations
from spanaug.pipeline.paraphraser.banned import banned_sequences
from spanaug.pipeline.paraphraser.hf_backend import HFParaphraser
from spanaug.pipeline.paraphraser.stage import paraphrase_stage

pytest.importorskip("ctranslate2")
pytestmark = pytest.mark.usefixtures("one_torch_thread")


@pytest.fixture(scope="module")
def models(tmp_path_factory):
    built = {}

    def get(family):
        if family not in built:
            built[family] = save_standin(tmp_path_factory.mktemp(family), family, CORPUS * 3)
        return built[family]

    return get


def _subsequence(seq, ids):
    n = len(seq)
    return any(tuple(ids[i : i + n]) == tuple(seq) for i in range(len(ids) - n + 1))


@pytest.mark.parametrize("family", list(FAMILIES))
def test_banned_sequences_match_in_context(models, family):
    """Every word's banned sequences cover how the tokenizer writes it mid-sentence and sentence-initially."""
    from transformers import AutoTokenizer

    tok = AutoTokenizer.from_pretrained(models(family))
    words = sorted({w for s in CORPUS for w in s.split() if w.isalpha()})
    for word in words:
        for phrase in case_variants(word):
            seqs = banned_sequences(tok, [phrase])
            if tok.unk_token_id in tok(phrase, add_special_tokens=False)["input_ids"]:
                continue  # outside the vocabulary: the model cannot write it as such
            for context in (f"{phrase} it is .", f"So {phrase} it is .", f"So , {phrase}"):
                ids = tok(context, add_special_tokens=False)["input_ids"]
                assert any(_subsequence(s, ids) for s in seqs), (
                    family,
                    phrase,
                    context,
                    tok.convert_ids_to_tokens(ids),
                )


def _requests(texts, constraints):
    return [
        {
            "seed_id": f"s{i}",
            "frame": "F",
            "lexical_unit": "x.v",
            "seed_trigger": "x",
            "iteration": 1,
            "source_tokens": t.split(),
            "source_text": t,
            "source_span_start": 0,
            "source_span_end": 0,
            "constraints": sorted(c),
        }
        for i, (t, c) in enumerate(zip(texts, constraints))
    ]


@pytest.mark.parametrize("family", list(FAMILIES))
def test_family_stage_hf_ct2_and_static_agree_under_constraints(models, family, tmp_path, monkeypatch):
    from transformers import AutoConfig

    from spanaug.pipeline.paraphraser.ct2_backend import CT2_FAMILIES, CT2Paraphraser
    from spanaug.pipeline.paraphraser.decoder_step import UnsupportedModel
    from spanaug.pipeline.paraphraser.stage import load_paraphraser
    from spanaug.pipeline.paraphraser.static_backend import StaticParaphraser

    monkeypatch.setenv("SPANAUG_CT2_CACHE", str(tmp_path / "ct2-cache"))
    path = models(family)
    hf = HFParaphraser.from_pretrained(path, device="cpu", dtype="float32")
    if (
        AutoConfig.from_pretrained(path).model_type not in CT2_FAMILIES
    ):  # refused at load, so that auto decodes it with hf on CPU
        with pytest.raises(UnsupportedModel, match="CTranslate2 does not decode"):
            CT2Paraphraser.from_pretrained(path, device="cpu")
        assert load_paraphraser(DecodeSettings(model=str(path)), "cpu").backend == "hf"
        others = ("static",)
    else:
        others = ("ct2", "static")
    static = StaticParaphraser.from_pretrained(path, device="cpu", dtype="float32")
    cfg = DecodeSettings(beam_size=4, return_top=4, dtype="float32")  # the default length rule, per sentence, in both
    texts = CORPUS[:3]
    free = hf.decode_batch(_requests(texts, [[]] * 3), cfg, 0)
    # Ban words the unconstrained model produced, in all their case variants.
    constraints = []
    for beams in free:
        words = sorted({w for text, _ in beams for w in text.split() if any(c.isalpha() for c in w)})[:3]
        constraints.append(sorted({v for w in words for v in case_variants(w)}))
    assert any(constraints)
    reqs = _requests(texts, constraints)

    # Same beams and decoder scores from both backends.
    loaded = {"hf": hf, "static": static}
    if "ct2" in others:
        loaded["ct2"] = CT2Paraphraser.from_pretrained(path, device="cpu")
    beams = {name: p.decode_batch(reqs, cfg, 0) for name, p in loaded.items()}
    for other in others:
        assert [[t for t, _ in b] for b in beams["hf"]] == [[t for t, _ in b] for b in beams[other]]
        for b_hf, b_other in zip(beams["hf"], beams[other]):
            assert [s for _, s in b_hf] == pytest.approx([s for _, s in b_other], abs=1e-4)

    # Through the stage: no output violates its constraints, and both backends write the same rows.
    requests_path = tmp_path / "requests.parquet"
    with artifacts.open_writer(requests_path, artifacts.REQUESTS) as writer:
        writer.write(reqs)
    rows = {}
    for backend in ("hf", *others):
        out = tmp_path / f"{backend}.parquet"
        stats = paraphrase_stage(requests_path, out, dataclasses.replace(cfg, model=path, backend=backend), "cpu")
        rows[backend] = artifacts.read_table(out, artifacts.PARAPHRASES).to_pylist()
        assert stats.requests == 3 and stats.outputs == len(rows[backend])
        # (random models may spell a banned word with other pieces: such outputs are dropped here)
        for row in rows[backend]:
            assert violations(row["paraphrase_text"], row["constraints"]) == []
            assert math.isfinite(row["paraphrase_score"])
    key = [(r["seed_id"], r["beam_rank"], r["paraphrase_text"]) for r in rows["hf"]]
    for other in others:
        assert key == [(r["seed_id"], r["beam_rank"], r["paraphrase_text"]) for r in rows[other]]
        assert [r["paraphrase_score"] for r in rows["hf"]] == pytest.approx(
            [r["paraphrase_score"] for r in rows[other]], abs=1e-3
        )
