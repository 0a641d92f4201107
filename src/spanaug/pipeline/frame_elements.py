"""Frame elements across a paraphrase: which spans of an output carry its source's FEs.

The trigger is aligned first; its span is the output's anchor. Each overt FE of the source then
gets candidate spans in the output (``frame_elements.mode``): the aligner's best spans for it
(``align``), or the places where its words occur verbatim (``keep``). Of all the ways to place the
FEs, the one with the highest total score whose FEs are *consistent* wins:

- no two FEs of the output overlap (as in any FrameNet annotation);
- each FE stands to the aligned trigger as it stood to the source's trigger (:func:`relation`): an
  FE apart from the trigger stays apart, one inside a multi-word trigger stays inside, one that
  covers it covers it. An FE that *is* the trigger (an incorporated FE, ``Degree`` = "strongest")
  follows the aligned trigger and takes its score, with no search.

An FE that cannot be placed is kept as ``LOST`` (``validation.LOST``): it has no span, and every
later iteration keeps it lost. Null instantiations pass through. This module holds the rules
alone, with no model, so the align stage, selection, statistics and tests share them.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from typing import Any, Literal

from spanaug.core.validation import LOST

Span = tuple[int, int]
#: An FE candidate: its span in the output and its score in [0, 1].
Candidate = tuple[Span, float]
#: How an FE's span stands to its trigger's.
Relation = Literal["disjoint", "equal", "inside", "contains", "partial"]

#: Coreness values that ``require: core`` protects. An FE whose coreness the input does not say
#: (CoNLL, JSONL) counts as core: nothing tells that it may be dropped.
CORE = frozenset({"Core", "Core-Unexpressed", None})

#: Search nodes tried per output before the best placement found so far is taken. The first
#: complete placement tried is the greedy one (each FE's best candidate that fits), so a cut search
#: is never worse than greedy; 4,029 FEs of the FN1.7 dev never come near it.
MAX_NODES = 20000


def relation(span: Span, trigger: Span) -> Relation:
    """How ``span`` stands to ``trigger`` (both inclusive)."""
    (s, e), (ts, te) = span, trigger
    if e < ts or s > te:
        return "disjoint"
    if (s, e) == (ts, te):
        return "equal"
    if ts <= s and e <= te:
        return "inside"
    if s <= ts and te <= e:
        return "contains"
    return "partial"


def has_span(fe: dict[str, Any]) -> bool:
    """An overt FE: one with words in its sentence."""
    return fe["null_type"] is None and fe["start"] is not None


def to_place(fes: Sequence[dict[str, Any]] | None, trigger: Span) -> list[int]:
    """The indices of the FEs whose place in an output must be searched: overt, and not the trigger."""
    return [n for n, fe in enumerate(fes or ()) if has_span(fe) and relation(_span(fe), trigger) != "equal"]


@dataclass
class _Search:
    """Branch and bound over one output's FE placements (the most promising first)."""

    options: list[list[Candidate]]  # per slot, its candidates that stand rightly to the trigger
    occupied: list[Span]  # spans already taken (FEs that follow the trigger)
    nodes: int = 0
    best_total: float = -1.0
    best: tuple[Candidate | None, ...] = ()

    def run(self) -> tuple[Candidate | None, ...]:
        # Slots with the best single candidates first: good totals early prune the most.
        order = sorted(range(len(self.options)), key=lambda n: -(self.options[n][0][1] if self.options[n] else 0.0))
        bounds = [0.0] * (len(order) + 1)
        for depth in range(len(order) - 1, -1, -1):
            opts = self.options[order[depth]]
            bounds[depth] = bounds[depth + 1] + (opts[0][1] if opts else 0.0)
        chosen: list[Candidate | None] = [None] * len(order)
        self._visit(0, order, bounds, chosen, list(self.occupied), 0.0)
        placed: list[Candidate | None] = [None] * len(order)
        for depth, slot in enumerate(order):
            placed[slot] = self.best[depth] if self.best else None
        return tuple(placed)

    def _visit(
        self,
        depth: int,
        order: list[int],
        bounds: list[float],
        chosen: list[Candidate | None],
        taken: list[Span],
        total: float,
    ) -> None:
        self.nodes += 1
        if total + bounds[depth] <= self.best_total or (self.nodes > MAX_NODES and self.best):
            return
        if depth == len(order):
            self.best_total, self.best = total, tuple(chosen)
            return
        for cand in self.options[order[depth]]:
            if any(relation(cand[0], t) != "disjoint" for t in taken):
                continue
            chosen[depth] = cand
            taken.append(cand[0])
            self._visit(depth + 1, order, bounds, chosen, taken, total + cand[1])
            taken.pop()
        chosen[depth] = None  # the FE is lost
        self._visit(depth + 1, order, bounds, chosen, taken, total)


def place(
    fes: Sequence[dict[str, Any]] | None,
    source_trigger: Span,
    trigger: Span | None,
    trigger_score: float,
    candidates: dict[int, Sequence[Candidate]],
) -> list[dict[str, Any]] | None:
    """The output's FEs: the source's ``fes`` (null: none annotated) carried onto an output whose
    trigger aligned to ``trigger`` (None: it did not, and every overt FE is lost).

    ``candidates`` maps the index of each FE of :func:`to_place` to its candidate spans, best first.
    The highest-scoring consistent placement wins (see the module's rules); FEs it leaves out are LOST.
    """
    if fes is None:
        return None
    slots = to_place(fes, source_trigger) if trigger is not None else []
    options = [
        [c for c in candidates.get(n, ()) if relation(c[0], trigger) == relation(_span(fes[n]), source_trigger)]
        for n in slots
    ]
    followers = [n for n, fe in enumerate(fes) if has_span(fe) and n not in slots]
    placed: dict[int, Candidate | None] = dict.fromkeys(followers)
    if trigger is not None:
        placed = dict.fromkeys(followers, (trigger, trigger_score))
        placed.update(zip(slots, _Search(options, [trigger] if followers else []).run()))
    return [_carried(fe, placed[n]) if has_span(fe) else _kept(fe) for n, fe in enumerate(fes)]


def verbatim_candidates(source_tokens: Sequence[str], span: Span, output_tokens: Sequence[str]) -> list[Candidate]:
    """``keep`` mode: every place where the FE's words occur in the output, each scored 1.0, nearest
    (relative position) first. A first word may change case (a phrase moved to or from the start)."""
    words = list(source_tokens[span[0] : span[1] + 1])
    n = len(words)
    where = span[0] / max(len(source_tokens), 1)
    hits = [
        (i, i + n - 1)
        for i in range(len(output_tokens) - n + 1)
        if _same_words(words, output_tokens[i : i + n], first_case=True)
    ]
    hits.sort(key=lambda s: (abs(s[0] / max(len(output_tokens), 1) - where), s[0]))
    return [(s, 1.0) for s in hits]


def verbatim_agreement(
    source_tokens: Sequence[str],
    source_fes: Sequence[dict[str, Any]] | None,
    source_trigger: Span,
    output_tokens: Sequence[str],
    output_fes: Sequence[dict[str, Any]] | None,
) -> tuple[int, int]:
    """A check of FE placements that needs no label: of the source's FEs to place whose words occur
    verbatim exactly once in the output (``verbatim``), how many the output places exactly there
    (``agreed``). An aligner that never learned that a copied phrase aligns to its copy places such
    FEs elsewhere; a lost FE counts as not agreed. ``output_fes`` is in the source's order."""
    verbatim = agreed = 0
    for n in to_place(source_fes, source_trigger):
        hits = verbatim_candidates(source_tokens, _span(source_fes[n]), output_tokens)
        if len(hits) != 1:
            continue
        verbatim += 1
        placed = output_fes[n] if output_fes is not None and n < len(output_fes) else None
        agreed += placed is not None and has_span(placed) and _span(placed) == hits[0][0]
    return verbatim, agreed


def _same_words(a: Sequence[str], b: Sequence[str], first_case: bool) -> bool:
    if list(a[1:]) != list(b[1:]):
        return False
    return a[0] == b[0] or (first_case and a[0][:1].lower() + a[0][1:] == b[0][:1].lower() + b[0][1:])


def _span(fe: dict[str, Any]) -> Span:
    return fe["start"], fe["end"]


def _carried(fe: dict[str, Any], placed: Candidate | None) -> dict[str, Any]:
    if placed is None:
        return {**fe, "start": None, "end": None, "null_type": LOST, "score": None}
    (start, end), score = placed
    return {**fe, "start": start, "end": end, "null_type": None, "score": float(score)}


def _kept(fe: dict[str, Any]) -> dict[str, Any]:
    """A null instantiation (or an FE lost before) as it was; it has no span to carry."""
    return {**fe, "score": fe.get("score")}


def substituted(fes: Sequence[dict[str, Any]] | None, trigger: Span, length: int) -> list[dict[str, Any]] | None:
    """A sentence's FEs after its trigger's words are replaced by ``length`` new ones (lexical
    substitution): an FE before the trigger stays, one after it moves by the change in length, one
    that is the trigger or covers it stretches with it. An FE inside the trigger or across its edge
    had words that are gone: it is ``LOST``, as a paraphrase loses one. Null instantiations stay."""
    if fes is None:
        return None
    shift = length - (trigger[1] - trigger[0] + 1)
    out = []
    for fe in fes:
        if not has_span(fe):
            out.append(_kept(fe))
            continue
        s, e = _span(fe)
        where = relation((s, e), trigger)
        if where == "disjoint":
            span = (s, e) if e < trigger[0] else (s + shift, e + shift)
        elif where in ("equal", "contains"):
            span = (s, e + shift)
        else:
            out.append(_carried(fe, None))
            continue
        out.append({**fe, "start": span[0], "end": span[1]})
    return out


# ---------------------------------------------------------------- what selection and statistics read


def carried_scores(fes: Iterable[dict[str, Any]] | None) -> list[float]:
    """One score per FE that has, or had, words (overt or LOST): its score, 0.0 when lost."""
    out = []
    for fe in fes or ():
        if has_span(fe):
            out.append(float(fe["score"]) if fe.get("score") is not None else 1.0)
        elif fe["null_type"] == LOST:
            out.append(0.0)
    return out


def joint_score(trigger_score: float, fes: Iterable[dict[str, Any]] | None) -> float:
    """``select: joint``: the mean of the trigger's score and every carried FE's (lost: 0)."""
    scores = [float(trigger_score), *carried_scores(fes)]
    return sum(scores) / len(scores)


def lowest_score(fes: Iterable[dict[str, Any]] | None) -> float | None:
    """The lowest carried FE score (lost: 0), None for an output with no FE to carry (the filter's)."""
    scores = carried_scores(fes)
    return min(scores) if scores else None


def meets(fes: Iterable[dict[str, Any]] | None, require: Literal["none", "core", "all"]) -> bool:
    """Whether an output keeps the FEs ``require`` asks for: ``none``, every ``core`` one (see
    :data:`CORE`), or ``all``."""
    if require == "none":
        return True
    lost = [fe for fe in fes or () if fe["null_type"] == LOST]
    return not lost if require == "all" else not any(fe.get("coreness") in CORE for fe in lost)


def every_fe_kept(fes: Iterable[dict[str, Any]] | None) -> bool:
    """An output that carries all its source's overt FEs (and has some)."""
    fes = list(fes or ())
    return any(has_span(fe) for fe in fes) and not any(fe["null_type"] == LOST for fe in fes)
