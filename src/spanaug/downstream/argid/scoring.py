"""Argument identification scores as open-SESAME computes them, and the most-frequent-role baseline.

open-SESAME (``sesame/evaluation.py``, ``labeled_eval``) scores each annotation's roles: a role is
right when the set of spans predicted for it equals the gold set (a discontiguous FE counts once,
all its pieces needed), weighted 1 for a core FE and 0.5 for a non-core one when the frame's
coreness is known (1 otherwise). Unlabeled span and token-level scores are its other two figures.
"""

from __future__ import annotations

from collections import Counter, defaultdict
from collections.abc import Iterable, Mapping, Sequence
from typing import Any

from spanaug.core.metrics import prf
from spanaug.downstream.argid.data import Annotation, Inventory, Span

#: Coreness types that open-SESAME counts as core (weight 1).
CORE = ("Core", "Core-Unexpressed")
Prediction = list[tuple[Span, str]]


def _by_role(fes: Iterable[tuple[Span, str]]) -> dict[str, frozenset[Span]]:
    grouped: dict[str, set[Span]] = defaultdict(set)
    for span, role in fes:
        grouped[role].add(span)
    return {role: frozenset(spans) for role, spans in grouped.items()}


def coreness_of(annotation: Annotation, role: str, inventory: Inventory | None) -> str | None:
    """The role's coreness in the annotation's frame: the input's, else the inventory's (a release)."""
    if role in annotation.coreness:
        return annotation.coreness[role]
    if inventory is not None:
        return inventory.coreness.get(annotation.frame, {}).get(role)
    return None


def _weight(coreness: str | None, known: bool) -> float:
    if not known:
        return 1.0
    return 1.0 if coreness in CORE else 0.5


def _kind(coreness: str | None) -> str:
    if coreness is None:
        return "unknown"
    return "core" if coreness in CORE else "non-core"


def argument_scores(
    gold: Sequence[Annotation], pred: Sequence[Prediction], inventory: Inventory | None = None
) -> dict[str, Any]:
    """Labeled precision, recall and F1 of (role, spans) as open-SESAME scores them (``precision``,
    ``recall``, ``f1``), its unlabeled and token-level figures, and F1 per FE type (core, non-core,
    unknown coreness) and per role, each with its gold count."""
    labeled = [0.0, 0.0, 0.0]  # tp, fp, fn, weighted by coreness
    unlabeled = [0, 0, 0]
    tokens = [0, 0, 0]
    kinds: dict[str, list[int]] = defaultdict(lambda: [0, 0, 0])
    roles: dict[str, list[int]] = defaultdict(lambda: [0, 0, 0])
    for ann, p in zip(gold, pred, strict=True):
        g_roles, p_roles = _by_role(ann.fes), _by_role(p)
        known = bool(ann.coreness) or (inventory is not None and ann.frame in inventory.coreness)
        for role in g_roles.keys() | p_roles.keys():
            core = coreness_of(ann, role, inventory)
            w = _weight(core, known)
            hit = role in g_roles and g_roles.get(role) == p_roles.get(role)
            counts = (hit, role in p_roles and not hit, role in g_roles and not hit)
            for i, c in enumerate(counts):
                labeled[i] += w * c
                kinds[_kind(core)][i] += c
                roles[role][i] += c
        g_spans, p_spans = set(g_roles.values()), set(p_roles.values())
        unlabeled[0] += len(g_spans & p_spans)
        unlabeled[1] += len(p_spans - g_spans)
        unlabeled[2] += len(g_spans - p_spans)
        _token_counts(len(ann.tokens), ann.fes, p, tokens)
    precision, recall, f1 = _prf3(*labeled)
    return {
        "precision": precision,
        "recall": recall,
        "f1": f1,
        "n_gold": sum(len(_by_role(a.fes)) for a in gold),
        "n_pred": sum(len(_by_role(p)) for p in pred),
        "annotations": len(gold),
        "unlabeled": dict(zip(("precision", "recall", "f1"), _prf3(*unlabeled))),
        "token": dict(zip(("precision", "recall", "f1"), _prf3(*tokens))),
        "by_fe_type": {k: _entry(v) for k, v in sorted(kinds.items())},
        "by_role": {r: _entry(v) for r, v in sorted(roles.items(), key=lambda kv: -(kv[1][0] + kv[1][2]))},
    }


def _token_counts(n: int, gold: Prediction, pred: Prediction, out: list[int]) -> None:
    """open-SESAME's token-level counts: each token's role (or none) compared."""
    g, p = [None] * n, [None] * n
    for labels, fes in ((g, gold), (p, pred)):
        for (s, e), role in fes:
            for i in range(s, e + 1):
                labels[i] = role
    for a, b in zip(g, p):
        if a == b:
            out[0] += a is not None
        else:
            out[1] += b is not None
            out[2] += a is not None


def _prf3(tp: float, fp: float, fn: float) -> tuple[float, float, float]:
    return prf(tp, tp + fp, tp + fn)


def _entry(counts: list[int]) -> dict[str, float | int]:
    precision, recall, f1 = _prf3(*counts)
    return {"precision": precision, "recall": recall, "f1": f1, "n_gold": counts[0] + counts[2]}


class MostFrequentRoleBaseline:
    """Each frame's most frequent role (and any other role found in at least half of its training
    annotations), placed at the span it most often has relative to the trigger (start offset from
    the trigger's start, end offset from its end). A frame never seen uses the counts of all frames."""

    def __init__(self, share: float = 0.5) -> None:
        self.share = share
        self.roles: dict[str | None, Counter] = defaultdict(Counter)
        self.places: dict[tuple[str | None, str], Counter] = defaultdict(Counter)
        self.annotations: Counter = Counter()

    def fit(self, annotations: Sequence[Annotation]) -> MostFrequentRoleBaseline:
        for ann in annotations:
            for frame in (ann.frame, None):  # None: every frame's counts, for unseen frames
                self.annotations[frame] += 1
                for role, spans in _by_role(ann.fes).items():
                    self.roles[frame][role] += 1
                    for s, e in spans:
                        self.places[frame, role][s - ann.trigger[0], e - ann.trigger[1]] += 1
        return self

    def predict(self, annotations: Sequence[Annotation]) -> list[Prediction]:
        return [self._predict(a) for a in annotations]

    def _predict(self, ann: Annotation) -> Prediction:
        frame = ann.frame if self.annotations[ann.frame] else None
        ranked = self.roles[frame].most_common()
        chosen = [r for i, (r, n) in enumerate(ranked) if i == 0 or n >= self.share * self.annotations[frame]]
        out: Prediction = []
        for role in chosen:
            for (ds, de), _ in self.places[frame, role].most_common():
                s, e = ann.trigger[0] + ds, ann.trigger[1] + de
                if 0 <= s <= e < len(ann.tokens) and all(e < a or s > b for (a, b), _ in out):
                    out.append(((s, e), role))
                    break
        return out


def scores_table(scores: Mapping[str, Any]) -> str:
    """One line: labeled P/R/F1 with the gold and predicted counts."""
    return (
        f"P {scores['precision']:.3f} R {scores['recall']:.3f} F1 {scores['f1']:.3f} "
        f"({scores['n_gold']} gold, {scores['n_pred']} predicted)"
    )
