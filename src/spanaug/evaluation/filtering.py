"""Filtering the augmented outputs (§6.2): the heuristic filters of Table 4 and the neural P/R-classifiers.

A heuristic filter is a conjunction of bounds on an output's iteration, paraphrase score (the
paraphraser's length-normalised NLL: lower is better), aligner score and, beyond the paper, its
lowest frame-element score (``min_fe_score``: every FE the output carries scored at least that, a
lost FE scoring 0; an output with no FE to carry, none annotated or ``frame_elements.mode`` off,
passes it, since it has no FE to have carried badly). The neural filter reads
the same three numbers, has two hidden layers of 10 units and a sigmoid output, and is trained
with BCE on human judgments; the P-classifier down-weights the positive class (fewer, surer
acceptances), the R-classifier the negative class.
"""

from __future__ import annotations

import logging
import math
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

import pyarrow as pa
import pyarrow.compute as pc
import torch
from torch import nn

from spanaug.core import artifacts, files, score_scale, training_loop
from spanaug.core.consistency import check_seeds_cover
from spanaug.core.degraded import warn
from spanaug.core.errors import ConfigError, InputError
from spanaug.core.evaluation_settings import ClassifierSettings
from spanaug.core.metrics import prf
from spanaug.core.score_scale import CALIBRATED, RAW, Scorers, describe
from spanaug.core.splits import assign_parts
from spanaug.evaluation.fe_retention import carries_fes, lowest_fe_scores

log = logging.getLogger(__name__)

BOUNDS = ("max_iteration", "max_paraphrase_score", "min_aligner_score", "min_fe_score")

#: The aligner-score bounds of the single-bound rows and of (lax, strict), per aligner score scale
#: (:mod:`spanaug.core.score_scale`). Raw: the seed paper's, on its aligner's sigmoid scores. Calibrated:
#: the probability that the aligned span is exactly right, so a bound says what it keeps: lax keeps an
#: output more likely right than wrong (0.5), strict one right at least four times in five (0.8). On
#: the production recipe's held-out dev answers (docs/evaluation.md), >= 0.5 keeps 94% of the answers
#: at an exact precision of 0.80 and >= 0.8 keeps 51% at 0.91; the paper's .95 kept 1.3%.
ALIGNER_BOUNDS: dict[str, tuple[float, float]] = {RAW: (0.95, 0.99), CALIBRATED: (0.5, 0.8)}


def _bound_name(bound: float) -> str:
    return f"{bound:g}".removeprefix("0")  # 0.95 -> ".95", as Table 4 writes it


def table4(scale: str = RAW) -> dict[str, dict[str, float]]:
    """The rows of the seed paper's Table 4, their aligner-score bounds on ``scale``. The paraphrase
    score bounds are the paper's on every paraphraser: a length-normalised NLL per token is on one
    scale whatever the model (the real run's decoder-only LM: median 0.44, 89% at most 0.8)."""
    lax, strict = ALIGNER_BOUNDS[scale]
    return {
        "iter == 1": {"max_iteration": 1},
        "iter <= 3": {"max_iteration": 3},
        "paraphrase score <= 0.6": {"max_paraphrase_score": 0.6},
        "paraphrase score <= 0.8": {"max_paraphrase_score": 0.8},
        f"aligner score >= {_bound_name(strict)}": {"min_aligner_score": strict},
        f"aligner score >= {_bound_name(lax)}": {"min_aligner_score": lax},
        "lax": {"max_iteration": 3, "max_paraphrase_score": 0.8, "min_aligner_score": lax},
        "strict": {"max_iteration": 1, "max_paraphrase_score": 0.6, "min_aligner_score": strict},
    }


#: The rows of the seed paper's Table 4, on its raw aligner-score scale.
DEFAULT_FILTERS: dict[str, dict[str, float]] = table4(RAW)


def default_filters(scorers: Scorers | None) -> dict[str, dict[str, float]]:
    """Table 4 on the scale of the table ``scorers`` describes: a table that records none (another
    tool's, an older spanaug's) keeps the paper's raw bounds. Filters a config writes (``filtering.filters``)
    never pass through here: their bounds mean what they say."""
    return table4(scorers.aligner_scale if scorers is not None else RAW)


#: A filter keeping a smaller share of the aligned outputs than this is reported: an augmenter using
#: it adds almost nothing, so FN+Para would read as FN.
SPARSE_SHARE = 0.1


def keep_share_warning(
    name: str, bounds: Mapping[str, float], passed: int, aligned: int, scorers: Scorers | None
) -> dict[str, Any] | None:
    """The warning (:mod:`spanaug.core.degraded`) for a filter passing ``passed`` of ``aligned``
    outputs: ``empty`` when it passes none, ``degraded`` under :data:`SPARSE_SHARE`; None otherwise."""
    if passed and (not aligned or passed / aligned >= SPARSE_SHARE):
        return None
    bounds_text = ", ".join(f"{k} {v}" for k, v in bounds.items())
    share = f" ({passed / aligned:.1%}, under {SPARSE_SHARE:.0%})" if passed and aligned else ""
    scale = f"; {describe(scorers)}" if "min_aligner_score" in bounds else ""
    message = (
        f"filter {name!r} ({bounds_text}) passes {passed} of {aligned} aligned outputs{share}{scale}: an augmenter "
        f"or export using it gets {'nothing' if not passed else 'almost nothing'}"
    )
    warnings: list[dict[str, Any]] = []
    warn(warnings, "empty" if not passed else "degraded", message, log)
    return warnings[0]


def check_filters(filters: Any) -> dict[str, dict[str, float]]:
    """The filters with their bounds checked (names, types) and unset (null) bounds left out.

    A bound of the wrong type would fail deep in Arrow, and a null one would fail every row."""
    if not isinstance(filters, Mapping):
        raise ConfigError(f"filters: expected an object of filter name -> bounds, not {type(filters).__name__}")
    out = {}
    for name, bounds in filters.items():
        if not isinstance(bounds, Mapping):
            raise ConfigError(f"filters: filter {name!r}: expected an object of bounds, not {type(bounds).__name__}")
        unknown = set(bounds) - set(BOUNDS)
        bounds = {k: v for k, v in bounds.items() if v is not None}
        if unknown or not bounds:
            raise ConfigError(
                f"filters: filter {name!r}: bounds must be a non-empty subset of {BOUNDS}, got "
                f"{sorted(bounds) if not unknown else sorted(unknown)}"
            )
        for key, value in bounds.items():
            number = isinstance(value, (int, float)) and not isinstance(value, bool) and math.isfinite(value)
            if not number or (key == "max_iteration" and not isinstance(value, int)):
                kind = "an integer" if key == "max_iteration" else "a finite number"
                raise ConfigError(f"filters: filter {name!r}: {key} is {value!r} (expected {kind})")
        out[name] = bounds
    return out


def heuristic_mask(table: pa.Table, bounds: Mapping[str, float]) -> pa.ChunkedArray:
    """Which rows pass every bound (a missing score fails a bound on it, but an output with no FE to
    carry passes ``min_fe_score``; a null bound is no bound)."""
    mask = pa.chunked_array([pa.array([True] * table.num_rows)])
    if bounds.get("max_iteration") is not None:
        mask = pc.and_(mask, pc.less_equal(table.column("iteration"), bounds["max_iteration"]))
    if bounds.get("max_paraphrase_score") is not None:
        mask = pc.and_(mask, pc.less_equal(table.column("paraphrase_score"), bounds["max_paraphrase_score"]))
    if bounds.get("min_aligner_score") is not None:
        mask = pc.and_(mask, pc.greater_equal(table.column("aligner_score"), bounds["min_aligner_score"]))
    if bounds.get("min_fe_score") is not None:
        lowest = lowest_fe_scores(table)
        mask = pc.and_(mask, pc.or_kleene(pc.is_null(lowest), pc.greater_equal(lowest, bounds["min_fe_score"])))
    aligned = table.column("aligned_start").is_valid()
    return pc.fill_null(pc.and_(mask, aligned), False)


# ---------------------------------------------------------------- judgments


def read_judgments(path: Path | str) -> dict[str, int]:
    """Output id -> 0/1 from a CSV or Parquet of ``output_id, score`` rows.

    Scores are 0/1 or 0-100; several judgments of one output are averaged, and the mean is
    binarised at 50 (0-100) or 0.5 (0/1), as in the paper.
    """
    path = Path(path)
    if path.suffix == ".parquet":
        import pyarrow.parquet as pq

        names = artifacts.read_schema(path).names
        missing = [c for c in ("output_id", "score") if c not in names]
        if missing:
            raise InputError(path, None, f"no column(s) {missing} (expected output_id and score)")
        try:
            table = pq.read_table(path, columns=["output_id", "score"])
        except (pa.ArrowException, OSError, ValueError) as exc:
            raise InputError(path, None, f"not a readable Parquet file ({type(exc).__name__}: {exc})") from None
        rows = [(f"row {n}", row) for n, row in enumerate(table.to_pylist())]
    else:
        rows = files.read_csv(path, ("output_id", "score"))
    scores: dict[str, list[float]] = {}
    for line, row in rows:
        output_id, raw = row["output_id"], row["score"]
        try:
            if isinstance(raw, bool) or not isinstance(output_id, (str, int)) or isinstance(output_id, bool):
                raise TypeError
            output_id, score = str(output_id), float(raw)
        except (TypeError, ValueError):
            raise InputError(
                path, line, f"output_id {output_id!r} with score {raw!r} (expected an id and a number)"
            ) from None
        if not 0 <= score <= 100:  # NaN fails this too
            raise InputError(path, line, f"score {score} outside 0-100")
        scores.setdefault(output_id, []).append(score)
    if not scores:
        raise InputError(path, None, "no judgments")
    scale = 100.0 if any(s > 1 for v in scores.values() for s in v) else 1.0
    return {k: int(sum(v) / len(v) >= scale / 2) for k, v in scores.items()}


# ---------------------------------------------------------------- the neural filter


class FilterNet(nn.Module):
    """(iteration, paraphrase score, aligner score) -> acceptance logit; two hidden layers of 10."""

    def __init__(self) -> None:
        super().__init__()
        self.net = nn.Sequential(nn.Linear(3, 10), nn.ReLU(), nn.Linear(10, 10), nn.ReLU(), nn.Linear(10, 1))
        # Inputs are standardised with training statistics, kept as buffers so saving keeps them.
        self.register_buffer("mean", torch.zeros(3))
        self.register_buffer("std", torch.ones(3))

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return self.net((x - self.mean) / self.std).squeeze(-1)


def features(table: pa.Table) -> torch.Tensor:
    """[N, 3] inputs; a missing score becomes the worst value (paraphrase 10, aligner 0)."""
    it = table.column("iteration").to_pylist()
    para = [10.0 if v is None else v for v in table.column("paraphrase_score").to_pylist()]
    al = [0.0 if v is None else v for v in table.column("aligner_score").to_pylist()]
    return torch.tensor(list(zip(it, para, al)), dtype=torch.float32)


def train_classifier(
    x: torch.Tensor, y: torch.Tensor, positive_weight: float, negative_weight: float, cfg: ClassifierSettings
) -> FilterNet:
    """Full-batch BCE with per-class weights."""
    torch.manual_seed(cfg.seed)
    model = FilterNet()
    model.mean.copy_(x.mean(0))
    model.std.copy_(x.std(0).clamp(min=1e-6) if len(x) > 1 else torch.ones(3))
    opt = torch.optim.Adam(model.parameters(), lr=cfg.learning_rate)
    weights = torch.where(y > 0.5, positive_weight, negative_weight)
    training_loop.fit(
        training_loop.LoopSettings(epochs=cfg.epochs, name="filter classifier", progress=False, log_epochs=False),
        opt,
        lambda epoch: [(x, y)],  # one full batch per epoch
        lambda batch: nn.functional.binary_cross_entropy_with_logits(model(batch[0]), batch[1], weight=weights),
        [model],
    )
    return model


def precision_recall(passed: Sequence[bool], gold: Sequence[int]) -> dict[str, float | int]:
    """Of judged outputs: precision (accepted among passed) and recall (passed among accepted)."""
    tp = sum(1 for p, g in zip(passed, gold) if p and g)
    n_pass, n_pos = sum(map(bool, passed)), sum(gold)
    precision, recall, _ = prf(tp, n_pass, n_pos)
    return {"judged": len(gold), "passed": n_pass, "precision": precision, "recall": recall}


def _keep_share_warnings(
    rows: Sequence[Mapping[str, Any]], filters: Mapping[str, Mapping[str, float]], scorers: Scorers | None
) -> list[dict[str, Any]]:
    """A warning for each filter that passes nothing, or under :data:`SPARSE_SHARE` of the aligned
    outputs (rows[0] is the unfiltered row)."""
    n_aligned = rows[0]["outputs"]
    found = (keep_share_warning(r["filter"], filters[r["filter"]], r["outputs"], n_aligned, scorers) for r in rows[1:])
    return [w for w in found if w is not None]


def _fe_bound_warnings(table: pa.Table, filters: Mapping[str, Mapping[str, float]]) -> list[dict[str, Any]]:
    """A warning for each filter bounding the FE score when no output carries FEs: the bound then
    passes every output (``frame_elements.mode`` off, or a corpus without FE annotations)."""
    warnings: list[dict[str, Any]] = []
    if carries_fes(table):
        return warnings
    for name, bounds in filters.items():
        if bounds.get("min_fe_score") is not None:
            warn(
                warnings,
                "degraded",
                f"filter {name!r} bounds min_fe_score, but no output carries frame elements "
                "(frame_elements.mode off, or no FE annotated): the bound passes every output",
                log,
            )
    return warnings


def _judged_rows(table: pa.Table, judgments: Path | str | None) -> tuple[dict[str, int], list[int], list[int]]:
    """The judgments, the rows of the judged outputs and their labels."""
    labels = read_judgments(judgments) if judgments else {}
    ids = table.column("output_id").to_pylist()
    judged = [i for i, oid in enumerate(ids) if oid in labels]
    if labels and not judged:
        raise InputError(judgments, None, "no judged output id matches this dataset's output_id column")
    return labels, judged, [labels[ids[i]] for i in judged]


def _record(scorers: Scorers | None) -> dict[str, Any] | None:
    return None if scorers is None else scorers.as_dict()


def _write_scored(
    table: pa.Table, classifier_scores: Mapping[str, list[float]], out: Path, scorers: Scorers | None = None
) -> None:
    """The dataset with each classifier's score (null where no classifier was trained)."""
    scored = table
    for name in ("p_classifier", "r_classifier"):
        scored = scored.append_column(
            name, pa.array(classifier_scores.get(name, [None] * table.num_rows), pa.float32())
        )
    artifacts.write_table(scored, out, artifacts.SCORED, scorers=_record(scorers))


def table_row(
    name: str,
    mask: Sequence[bool],
    n_seeds: int,
    on_judged: Sequence[bool] | None = None,
    judged_gold: Sequence[int] | None = None,
) -> dict[str, Any]:
    """A row of the filters table: the outputs ``mask`` passes, their multiple of the seeds and, with
    judgments, the precision and recall of ``on_judged`` against ``judged_gold``."""
    n = sum(mask)
    row: dict[str, Any] = {"filter": name, "outputs": n, "multiple_over_seeds": n / n_seeds if n_seeds else None}
    if judged_gold:
        row.update(precision_recall(on_judged or [], judged_gold))
    return row


def heuristic_rows(
    table: pa.Table, masks: Mapping[str, pa.ChunkedArray], n_seeds: int, judged: Sequence[int], gold: Sequence[int]
) -> list[dict[str, Any]]:
    """The unfiltered row (every aligned output), then a row per heuristic filter's mask."""
    aligned = table.column("aligned_start").is_valid().to_pylist()
    rows = [table_row("none (all aligned)", aligned, n_seeds, [True] * len(judged), gold)]
    for name, mask in masks.items():
        passed = mask.to_pylist()
        rows.append(table_row(name, passed, n_seeds, [passed[i] for i in judged], gold))
    return rows


def classifier_split(n_judged: int, cfg: ClassifierSettings) -> tuple[list[int], list[int]]:
    """The judged outputs (by position) the classifiers train on and those they are tested on: a
    seeded share, at least one output, held out."""
    part = assign_parts(
        range(n_judged), [("test", max(cfg.test_share, 1 / n_judged)), ("train", None)], order="shuffle", seed=cfg.seed
    )
    return [i for i in range(n_judged) if part[i] == "train"], [i for i in range(n_judged) if part[i] == "test"]


def train_classifiers(
    table: pa.Table, judged: Sequence[int], gold: Sequence[int], train: Sequence[int], cfg: ClassifierSettings
) -> dict[str, tuple[nn.Module, list[float]]]:
    """The P- and R-classifiers trained on the ``train`` judged outputs: each model and its score
    of every output."""
    x, y = features(table), torch.tensor([float(g) for g in gold])
    on_train = x[torch.tensor(judged)][train]
    out = {}
    for name, pos_w, neg_w in (("p_classifier", cfg.downweight, 1.0), ("r_classifier", 1.0, cfg.downweight)):
        model = train_classifier(on_train, y[train], pos_w, neg_w, cfg)
        with torch.no_grad():
            out[name] = (model, torch.sigmoid(model(x)).tolist())
    return out


def classifier_row(
    name: str, scores: Sequence[float], n_seeds: int, judged: Sequence[int], gold: Sequence[int], test: Sequence[int]
) -> dict[str, Any]:
    """A classifier's row of the filters table: outputs scored >= 0.5, P/R on the held-out judged ones."""
    passed = [score >= 0.5 for score in scores]
    on_test = [passed[judged[i]] for i in test]
    return table_row(f"{name} >= 0.5 (held-out judged)", passed, n_seeds, on_test, [gold[i] for i in test])


def filter_stage(
    augmented: Path | str,
    seeds: Path | str,
    out_dir: Path | str,
    filters: Mapping[str, Mapping[str, float]] | None = None,
    judgments: Path | str | None = None,
    cfg: ClassifierSettings | None = None,
) -> list[dict[str, Any]]:
    """Write each filter's subset, the scored dataset and the filters table (size multiple, P/R).
    ``filters`` None: Table 4 on the aligner-score scale the augmented table records (:func:`default_filters`)."""
    cfg = cfg or ClassifierSettings()
    out_dir = Path(out_dir)
    table = artifacts.read_table(augmented, artifacts.AUGMENTED)
    scorers = score_scale.read(augmented)
    filters = check_filters(default_filters(scorers) if filters is None else filters)
    (out_dir / "subsets").mkdir(parents=True, exist_ok=True)
    seed_table = artifacts.read_table(seeds, artifacts.SENTENCES)
    check_seeds_cover(seeds, seed_table, augmented, table.column("seed_id"))
    n_seeds = seed_table.num_rows
    labels, judged, gold = _judged_rows(table, judgments)

    masks = {name: heuristic_mask(table, bounds) for name, bounds in filters.items()}
    for name, mask in masks.items():
        subset = out_dir / "subsets" / f"{_slug(name)}.parquet"
        artifacts.write_table(table.filter(mask), subset, artifacts.AUGMENTED, scorers=_record(scorers))
    rows = heuristic_rows(table, masks, n_seeds, judged, gold)
    warnings = _keep_share_warnings(rows, filters, scorers) + _fe_bound_warnings(table, filters)
    summary: dict[str, Any] = {
        "judged_outputs": len(judged),
        "scorers": _record(scorers),
        "filters": {n: dict(b) for n, b in filters.items()},
        "warnings": warnings,
    }
    classifiers: dict[str, tuple[nn.Module, list[float]]] = {}
    if len(set(gold)) == 2:
        train, test = classifier_split(len(judged), cfg)
        classifiers = train_classifiers(table, judged, gold, train, cfg)
        for name, (model, scores) in classifiers.items():
            rows.append(classifier_row(name, scores, n_seeds, judged, gold, test))
            with files.atomic_path(out_dir / f"{name}.pt") as tmp:
                torch.save(model.state_dict(), tmp)
        summary["classifier_split"] = {"train": len(train), "test": len(test), "downweight": cfg.downweight}
    elif labels:
        warn(
            warnings,
            "degraded",
            f"the {len(judged)} judged outputs hold a single class: the neural P/R-classifiers "
            "are not trained (their columns stay null)",
            log,
        )
    _write_scored(
        table, {name: scores for name, (_, scores) in classifiers.items()}, out_dir / "scored.parquet", scorers
    )
    files.write_csv(rows, out_dir / "filters.csv")
    summary["table"] = rows
    files.write_json(summary, out_dir / "filters.json")
    return rows


def _slug(name: str) -> str:
    return "".join(c if c.isalnum() else "_" for c in name).strip("_").replace("__", "_")


def named_filter(
    name: str | None,
    filters: Mapping[str, Mapping[str, float]] | None = None,
    scorers: Scorers | None = None,
) -> Mapping[str, float] | None:
    """The bounds of the filter ``name`` among ``filters`` (None: Table 4 on the aligner-score scale
    of ``scorers``, :func:`default_filters`); None or ``"none"`` selects every aligned output."""
    if not name or name == "none":
        return None
    filters = check_filters(default_filters(scorers) if filters is None else filters)
    if name not in filters:
        raise ConfigError(f"filter {name!r} is not defined: {sorted(filters)}")
    return filters[name]
