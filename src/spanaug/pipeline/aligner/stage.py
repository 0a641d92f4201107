"""The align stage: every beam of a PARAPHRASES shard aligned, as an ALIGNED shard.

Each beam's trigger is aligned, and with ``frame_elements.mode`` its source's frame elements are
carried too (:mod:`spanaug.pipeline.frame_elements`): in ``align`` mode the FEs' instances go to the
aligner in the same call as the triggers, so a paper-kind aligner encodes each sentence pair once
for the trigger and all of its FEs, and no model is loaded twice. A cross-kind aligner, which
encodes every span, places only the FEs of the beams selection will choose when it chooses by the
trigger alone (:func:`align_rows`).
"""

from __future__ import annotations

import logging
from collections import Counter
from collections.abc import Iterable
from pathlib import Path
from typing import Any

from spanaug.core import artifacts, files, score_scale
from spanaug.core.config import FrameElementSettings
from spanaug.core.engine import EngineRecord, dtype_name
from spanaug.core.heap import long_lived_objects_frozen
from spanaug.pipeline import frame_elements as fe_rules
from spanaug.pipeline.aligner.instances import Instance
from spanaug.pipeline.aligner.interface import SpanAlignerModel
from spanaug.pipeline.aligner.loading import AutoAligner
from spanaug.pipeline.iterations import best_beams, selection_reads_every_beams_fes

log = logging.getLogger(__name__)


def align_stage(
    model: Path | str,
    paraphrases_path: Path | str,
    out: Path | str,
    fe: FrameElementSettings | None = None,
    encoder: str | None = None,
    device: str | None = "auto",
    dtype: str | None = "auto",
    chunk_rows: int = 4096,
    batch_size: int = 64,
    stats_path: Path | str | None = None,
    aligner: SpanAlignerModel | None = None,
) -> int:
    """CLI stage: a PARAPHRASES shard -> an ALIGNED shard (one prediction per beam), with ``aligner``
    (loaded by the caller for several shards) or the one in ``model``.

    Its statistics count the beams aligned and not, the sentence pairs too long for the encoder,
    which were encoded one sentence at a time (see ``PairEncoder.encode_batch``), and with FEs on,
    the FEs carried and lost. An empty shard is legitimate (every chain of the shard has ended)
    and is said so.
    """
    fe = fe or FrameElementSettings()
    # The input is checked (its columns, and that it holds paraphrases) before the model loads.
    batches = artifacts.iter_batches(paraphrases_path, artifacts.PARAPHRASES, chunk_rows)
    if aligner is None:
        aligner = load_aligner(model, encoder, device, dtype)
    stats: Counter[str] = Counter(beams=0, aligned=0, unaligned=0)
    provenance = artifacts.derived(paraphrases_path, "aligned")
    scorers = aligner_scorers(aligner, paraphrases_path).as_dict()
    with (
        long_lived_objects_frozen(),
        artifacts.open_writer(out, artifacts.ALIGNED, provenance, scorers) as writer,
    ):
        for table in batches:
            rows = table.to_pylist()
            align_rows(aligner, rows, fe, batch_size)
            for row in rows:
                stats["aligned" if row["aligned_start"] is not None else "unaligned"] += 1
                if row["frame_elements"] is not None:  # FEs on, and placed on this beam
                    stats.update(fe_counts(row["source_frame_elements"], row["frame_elements"]))
                    stats.update(verbatim_counts(row))
            stats["beams"] += len(rows)
            writer.write(rows)
        engine = aligner_engine(aligner)
        writer.closing_metadata[artifacts.ENGINE_KEY] = engine.as_dict()
    summary: dict[str, Any] = {**stats, **aligner.limit_stats(), "frame_elements_mode": fe.mode, **engine.as_dict()}
    if fe.mode == "align":
        summary["frame_elements_placed_on"] = "chosen beams" if fes_on_chosen_beams_only(aligner, fe) else "every beam"
    if fe.mode != "off":
        summary["frame_elements_verbatim_agreement"] = _share(
            stats["frame_elements_verbatim_agreed"], stats["frame_elements_verbatim"]
        )
    summary["empty_shard"] = stats["beams"] == 0
    if summary["empty_shard"]:
        log.warning("%s holds no paraphrase (every chain of this shard has ended): empty shard", paraphrases_path)
    log.info("align %s: %s", paraphrases_path, summary)
    if stats_path:
        files.write_json(summary, stats_path)
    return writer.rows


def load_aligner(model: Path | str, encoder: str | None, device: str | None, dtype: str | None) -> SpanAlignerModel:
    """The trained aligner in ``model``, of either kind, as the stage runs it."""
    return AutoAligner.from_pretrained(model, device=device, encoder=encoder, dtype=dtype)


def aligner_scorers(aligner: SpanAlignerModel, paraphrases_path: Path | str) -> score_scale.Scorers:
    """What scores an aligned shard (:mod:`spanaug.core.score_scale`): the aligner's kind, whether its
    config holds a fitted Platt scaling (only the cross kind fits one), and the backend that decoded
    the paraphrases, as their shard's engine record names it."""
    engine = artifacts.read_engine(paraphrases_path) or {}
    backend = engine.get("backend")
    calibration = getattr(getattr(aligner, "config", None), "calibration", None)
    return score_scale.of_aligner(aligner.kind, calibration, backend if isinstance(backend, str) else None)


def aligner_engine(aligner: SpanAlignerModel) -> EngineRecord:
    """What aligned a shard (:mod:`spanaug.core.engine`): the aligner's kind as its backend, its
    device and its encoder's dtype; its steps run op by op."""
    from spanaug.core.devices import device_name  # torch: an aligner is loaded by now

    device, dtype = getattr(aligner, "device", None), getattr(aligner, "dtype", None)
    return EngineRecord(
        f"{aligner.kind} aligner",
        device_name(device) if device is not None else "unknown",
        dtype_name(dtype) if dtype is not None else "unknown",
    )


def align_rows(
    aligner: SpanAlignerModel, rows: list[dict[str, Any]], fe: FrameElementSettings, batch_size: int
) -> None:
    """Set each PARAPHRASES row's aligned span, score and carried FEs (ALIGNED columns), in place.

    In ``align`` mode, the FEs of every beam are placed where selection reads them
    (:func:`~spanaug.pipeline.iterations.selection_reads_every_beams_fes`) or where an aligner
    encodes a pair once for all its spans (the paper kind; a beam's trigger instance and its FEs'
    follow one another, so one call encodes each pair once). Otherwise, with an aligner that encodes
    each span (the cross kind), the triggers are aligned first and only the FEs of the beam that
    selection will choose (:func:`~spanaug.pipeline.iterations.best_beams`, by the trigger's score)
    are placed; the other beams' ``frame_elements`` are null. The chain is the same, for about 40%
    fewer encoder passes (three beams of a FrameNet sentence: 3 triggers and 1.4 FEs instead of 3
    and 4.2). A request split between two of the stage's chunks has a chosen beam in each, and
    ``select`` takes the better.
    """
    everyone = range(len(rows))
    if not fes_on_chosen_beams_only(aligner, fe):
        found = _predict(aligner, rows, fe, batch_size, triggers=everyone, fes_of=everyone)
        for row, placed in zip(rows, found):
            row["frame_elements"] = None if fe.mode == "off" else carry(row, placed if fe.mode == "align" else None)
        return
    _predict(aligner, rows, fe, batch_size, triggers=everyone, fes_of=())
    for row in rows:
        row["frame_elements"] = None  # not placed; the chosen beams' are, below
    chosen = {id(row) for row in best_beams(rows, fe)}
    winners = [n for n, row in enumerate(rows) if id(row) in chosen]
    found = _predict(aligner, rows, fe, batch_size, triggers=(), fes_of=winners)
    for n in winners:
        rows[n]["frame_elements"] = carry(rows[n], found[n])


def fes_on_chosen_beams_only(aligner: SpanAlignerModel, fe: FrameElementSettings) -> bool:
    """Whether :func:`align_rows` places the FEs of the beams selection will choose, not of all."""
    return fe.mode == "align" and aligner.encodes_each_span and not selection_reads_every_beams_fes(fe)


def _predict(
    aligner: SpanAlignerModel,
    rows: list[dict[str, Any]],
    fe: FrameElementSettings,
    batch_size: int,
    triggers: Iterable[int],
    fes_of: Iterable[int],
) -> list[dict[int, list[fe_rules.Candidate]]]:
    """One aligner call for the triggers of the rows numbered ``triggers`` (their aligned span and
    score set in place) and, in ``align`` mode, the FEs of those numbered ``fes_of``: each row's FE
    candidates, by FE index."""
    with_trigger = set(triggers)
    with_fes = set(fes_of) if fe.mode == "align" else set()
    instances: list[Instance] = []
    owners: list[tuple[int, int | None]] = []  # (row, FE index; None for the trigger)
    for n in sorted(with_trigger | with_fes):
        row = rows[n]
        trigger = (row["source_span_start"], row["source_span_end"])
        beam = f"{row['seed_id']}:{row['beam_rank']}"
        if n in with_trigger:
            instances.append(Instance(beam, row["source_tokens"], row["paraphrase_tokens"], trigger))
            owners.append((n, None))
        for k in fe_rules.to_place(row["source_frame_elements"], trigger) if n in with_fes else ():
            span = row["source_frame_elements"][k]["start"], row["source_frame_elements"][k]["end"]
            instances.append(Instance(f"{beam}:fe{k}", row["source_tokens"], row["paraphrase_tokens"], span))
            owners.append((n, k))
    top_k = fe.candidates if fe.mode == "align" else 1
    candidates: list[dict[int, list[fe_rules.Candidate]]] = [{} for _ in rows]
    for (n, k), (accepted, best) in zip(owners, aligner.predict_candidates(instances, top_k, batch_size=batch_size)):
        if k is None:
            rows[n]["aligned_start"], rows[n]["aligned_end"] = accepted[0][0] if accepted else (None, None)
            rows[n]["aligner_score"] = best
        else:
            candidates[n][k] = accepted
    return candidates


def carry(row: dict[str, Any], found: dict[int, list[fe_rules.Candidate]] | None) -> list[dict[str, Any]] | None:
    """The beam's FEs: placed among the aligner's candidates ``found``, or (None: ``keep`` mode) among
    the places where each FE's words occur verbatim."""
    fes = row["source_frame_elements"]
    trigger = (row["source_span_start"], row["source_span_end"])
    if found is None:
        found = {
            k: fe_rules.verbatim_candidates(
                row["source_tokens"], (fes[k]["start"], fes[k]["end"]), row["paraphrase_tokens"]
            )
            for k in fe_rules.to_place(fes, trigger)
        }
    aligned = (row["aligned_start"], row["aligned_end"]) if row["aligned_start"] is not None else None
    return fe_rules.place(fes, trigger, aligned, row["aligner_score"], found)


def verbatim_counts(row: dict[str, Any]) -> Counter[str]:
    """One beam's FEs whose words it repeats verbatim (once), and those placed on them
    (``frame_elements.verbatim_agreement``)."""
    verbatim, agreed = fe_rules.verbatim_agreement(
        row["source_tokens"],
        row["source_frame_elements"],
        (row["source_span_start"], row["source_span_end"]),
        row["paraphrase_tokens"],
        row["frame_elements"],
    )
    return Counter(frame_elements_verbatim=verbatim, frame_elements_verbatim_agreed=agreed)


def fe_counts(source: list[dict[str, Any]] | None, carried: list[dict[str, Any]] | None) -> Counter[str]:
    """What one beam did with its source's FEs, for the stage's statistics."""
    if not source or carried is None:
        return Counter()
    to_carry = sum(fe_rules.has_span(fe) for fe in source)
    kept = sum(fe_rules.has_span(fe) for fe in carried)
    return Counter(
        beams_with_frame_elements=1,
        frame_elements_to_carry=to_carry,
        frame_elements_carried=kept,
        frame_elements_lost=to_carry - kept,
        beams_keeping_every_frame_element=int(to_carry > 0 and kept == to_carry),
    )


def _share(part: int, whole: int) -> float | None:
    return part / whole if whole else None
