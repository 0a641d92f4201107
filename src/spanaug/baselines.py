"""Word-alignment baselines of the seed paper (§4.2): FastAlign and DiscAlign, projected to spans.

A word aligner predicts links between source and target tokens; its span prediction for a source
span follows the links of the span's words and takes the maximal target span they cover (no
links: no prediction).
"""

from __future__ import annotations

import dataclasses
import json
import logging
import random
import shutil
import subprocess
import tempfile
from collections.abc import Iterable, Sequence
from pathlib import Path
from typing import Any

import torch
from torch import nn
from tqdm import tqdm

from spanaug import artifacts
from spanaug.align import AlignerConfig, Instance, PairEncoder, pair_key
from spanaug.errors import ConfigError, InputError
from spanaug.paraphrase import choose_device
from spanaug.wordalign import AlignedPair, Link, write_aligned_json

log = logging.getLogger(__name__)

Pair = tuple[tuple[str, ...], tuple[str, ...]]

# ---------------------------------------------------------------- projection and symmetrisation


def project_span(links: Iterable[Link], span: tuple[int, int]) -> tuple[int, int] | None:
    """The maximal target span covered by the links of the source span's words (None: no links)."""
    targets = [j for i, j in links if span[0] <= i <= span[1]]
    return (min(targets), max(targets)) if targets else None


def grow_diag_final_and(forward: set[Link], backward: set[Link], n_src: int, n_tgt: int) -> set[Link]:
    """Koehn et al.'s grow-diag-final-and of two directional alignments (both as (source, target))."""
    union = forward | backward
    alignment = forward & backward
    src_done = {i for i, _ in alignment}
    tgt_done = {j for _, j in alignment}
    neighbours = [(-1, 0), (0, -1), (1, 0), (0, 1), (-1, -1), (-1, 1), (1, -1), (1, 1)]

    def add(i: int, j: int) -> None:
        alignment.add((i, j))
        src_done.add(i)
        tgt_done.add(j)

    grew = True
    while grew:
        grew = False
        for i in range(n_src):
            for j in range(n_tgt):
                if (i, j) not in alignment:
                    continue
                for di, dj in neighbours:
                    cand = (i + di, j + dj)
                    if cand in union and cand not in alignment and (cand[0] not in src_done or cand[1] not in tgt_done):
                        add(*cand)
                        grew = True
    for directional in (forward, backward):  # final-and: both ends still unaligned
        for i in range(n_src):
            for j in range(n_tgt):
                if (i, j) in directional and i not in src_done and j not in tgt_done:
                    add(i, j)
    return alignment


def parse_pharaoh(line: str) -> set[Link]:
    """``"0-1 2-3"`` (Pharaoh format, as fast_align and atools write) -> links."""
    return {(int(i), int(j)) for i, j in (item.split("-") for item in line.split())}


def project_instances(instances: Sequence[Instance], links: dict[Pair, set[Link]]) -> list[tuple[int, int] | None]:
    """Each instance's source span projected through its sentence pair's links."""
    return [project_span(links[pair_key(inst)], inst.source_span) for inst in instances]


def span_predictions(instances: Sequence[Instance], links: dict[Pair, set[Link]]) -> list[dict[str, Any]]:
    """Prediction records (the span aligner's format) from word links per sentence pair."""
    return [{"id": inst.id, "target_span": list(span) if span else None, "score": 1.0 if span else 0.0}
            for inst, span in zip(instances, project_instances(instances, links))]


# ---------------------------------------------------------------- FastAlign


@dataclasses.dataclass
class FastAlignConfig:
    lowercase: bool = True
    iterations: int = 5
    #: A user's own fast_align and atools binaries (paths or names on PATH); when fast_align is
    #: unset the systran-align wheel runs fast_align in-process.
    fast_align_bin: str | None = None
    atools_bin: str | None = None


def _norm(tokens: Sequence[str], lowercase: bool) -> list[str]:
    return [t.lower() if lowercase else t for t in tokens]


def read_text_pairs(path: Path | str) -> list[tuple[list[str], list[str]]]:
    """Extra training text: ``source ||| target`` or ``source<TAB>target`` lines, whitespace-tokenised."""
    pairs = []
    with open(path, encoding="utf-8") as handle:
        for lineno, line in enumerate(handle, start=1):
            if not line.strip():
                continue
            parts = line.rstrip("\n").split(" ||| ") if " ||| " in line else line.rstrip("\n").split("\t")
            if len(parts) < 2 or not parts[0].split() or not parts[1].split():
                raise InputError(path, lineno, "expected 'source ||| target' or 'source<TAB>target'")
            pairs.append((parts[0].split(), parts[1].split()))
    return pairs


def fast_align(eval_pairs: Sequence[Pair], training_pairs: Iterable[tuple[Sequence[str], Sequence[str]]] = (),
               cfg: FastAlignConfig | None = None) -> dict[Pair, set[Link]]:
    """Symmetrised FastAlign links for ``eval_pairs``, trained on them plus ``training_pairs``."""
    cfg = cfg or FastAlignConfig()
    corpus = [(_norm(s, cfg.lowercase), _norm(t, cfg.lowercase)) for s, t in eval_pairs]
    corpus += [(_norm(s, cfg.lowercase), _norm(t, cfg.lowercase)) for s, t in training_pairs]
    with tempfile.TemporaryDirectory(prefix="fastalign-") as tmp:
        text = Path(tmp) / "corpus.txt"
        text.write_text("".join(f"{' '.join(s)} ||| {' '.join(t)}\n" for s, t in corpus), encoding="utf-8")
        if cfg.fast_align_bin:
            links = _fast_align_subprocess(text, len(eval_pairs), cfg, Path(tmp))
        else:
            links = _fast_align_inprocess(text, corpus[: len(eval_pairs)], cfg, Path(tmp))
    return dict(zip(eval_pairs, links))


def _fast_align_inprocess(text: Path, pairs: Sequence[tuple[list[str], list[str]]], cfg: FastAlignConfig,
                          tmp: Path) -> list[set[Link]]:
    # systran-align trains both directions and returns links symmetrised by the library; its
    # directional alignments are not exposed (use fast_align_bin for the paper's exact toolchain).
    import systran_align

    fwd, bwd = str(tmp / "fwd.probs"), str(tmp / "bwd.probs")
    systran_align.generate_alignment_probabilities(str(text), fwd, bwd, iterations=cfg.iterations,
                                                   favor_diagonal=True, optimize_tension=True)
    aligner = systran_align.Aligner(fwd, bwd)
    results = aligner.align_batch([s for s, _ in pairs], [t for _, t in pairs])
    return [set(map(tuple, r["alignments"])) for r in results]


def _tool(name: str | None, key: str) -> str:
    path = shutil.which(name) if name else None
    if not path:
        raise ConfigError(f"{key}: {name!r} is not an executable file or a command on PATH")
    return path


def _fast_align_subprocess(text: Path, n_eval: int, cfg: FastAlignConfig, tmp: Path) -> list[set[Link]]:
    """``fast_align -d -o -v`` both ways, then ``atools -c grow-diag-final-and`` (or ours without atools)."""
    exe = _tool(cfg.fast_align_bin, "baselines.fastalign.fast_align_bin")
    directions = {}
    for name, extra in (("forward", []), ("reverse", ["-r"])):
        out = tmp / f"{name}.align"
        with open(out, "w") as handle:
            subprocess.run([exe, "-i", str(text), "-d", "-o", "-v", "-I", str(cfg.iterations), *extra], check=True,
                           stdout=handle, stderr=subprocess.DEVNULL)
        directions[name] = out
    if cfg.atools_bin:
        atools = _tool(cfg.atools_bin, "baselines.fastalign.atools_bin")
        result = subprocess.run([atools, "-i", str(directions["forward"]), "-j", str(directions["reverse"]),
                                 "-c", "grow-diag-final-and"], check=True, capture_output=True, text=True)
        return [parse_pharaoh(line) for line in result.stdout.splitlines()[:n_eval]]
    lines = text.read_text(encoding="utf-8").splitlines()
    fwd = directions["forward"].read_text().splitlines()
    rev = directions["reverse"].read_text().splitlines()
    out = []
    for n in range(n_eval):
        src, tgt = (side.split() for side in lines[n].split(" ||| "))
        # -r output is already in source-target order (fast_align swaps it back).
        out.append(grow_diag_final_and(parse_pharaoh(fwd[n]), parse_pharaoh(rev[n]), len(src), len(tgt)))
    return out


# ---------------------------------------------------------------- DiscAlign


@dataclasses.dataclass
class DiscAlignConfig:
    encoder: str = "bert-base-cased"
    projection: int = 256
    #: Count possible (not only sure) links as positives.
    possible_as_positive: bool = False
    threshold: float = 0.5
    max_length: int = 512


class LinkScorer(nn.Module):
    """Projections of source and target word vectors; their product is one logit per word pair.

    Two learned scalars also weigh the cosine of the raw vectors and the distance between the
    words' relative positions, cues a small training set (713 pairs) cannot teach the projections
    quickly.
    """

    def __init__(self, hidden: int, projection: int):
        super().__init__()
        self.src = nn.Sequential(nn.Linear(hidden, projection), nn.Tanh(), nn.Linear(projection, projection))
        self.tgt = nn.Sequential(nn.Linear(hidden, projection), nn.Tanh(), nn.Linear(projection, projection))
        self.cosine_weight = nn.Parameter(torch.tensor(5.0))
        self.distance_weight = nn.Parameter(torch.tensor(-1.0))
        self.bias = nn.Parameter(torch.tensor(-3.0))
        self.scale = projection ** -0.5

    def forward(self, src: torch.Tensor, tgt: torch.Tensor) -> torch.Tensor:
        cosine = nn.functional.normalize(src, dim=-1) @ nn.functional.normalize(tgt, dim=-1).T
        rel_src = torch.arange(src.shape[0], device=src.device) / max(src.shape[0] - 1, 1)
        rel_tgt = torch.arange(tgt.shape[0], device=tgt.device) / max(tgt.shape[0] - 1, 1)
        distance = (rel_src[:, None] - rel_tgt[None, :]).abs()
        return (self.src(src) @ self.tgt(tgt).T * self.scale + self.cosine_weight * cosine
                + self.distance_weight * distance + self.bias)


class DiscAligner:
    """A discriminative word aligner after Stengel-Eskin et al. (2019), on a frozen encoder."""

    CONFIG = "discalign_config.json"
    WEIGHTS = "link_scorer.pt"

    def __init__(self, config: DiscAlignConfig, device: str | None = "auto"):
        self.config = config
        self.device = choose_device(device)
        self.words = PairEncoder(config.encoder, device=self.device, max_length=config.max_length, cache={})
        self.scorer = LinkScorer(self.words.encoder.config.hidden_size, config.projection).to(self.device)

    def save_pretrained(self, out: Path | str) -> None:
        artifacts.save_model_dir(out, self.WEIGHTS, self.scorer.state_dict(), self.CONFIG, dataclasses.asdict(self.config))

    @classmethod
    def from_pretrained(cls, path: Path | str, device: str | None = "auto") -> "DiscAligner":
        model = cls(DiscAlignConfig(**artifacts.read_model_config(path, cls.CONFIG, "DiscAlign model")), device=device)
        model.scorer.load_state_dict(artifacts.load_weights(Path(path) / cls.WEIGHTS, model.device))
        model.scorer.eval()
        return model

    def _targets(self, pair: AlignedPair) -> tuple[torch.Tensor, torch.Tensor]:
        """Label matrix (1 on positive links) and a mask that leaves out possible-only links."""
        labels = torch.zeros(len(pair.source), len(pair.target), device=self.device)
        mask = torch.ones_like(labels)
        for i, j in pair.sure:
            labels[i, j] = 1.0
        for i, j in pair.possible - pair.sure:
            if self.config.possible_as_positive:
                labels[i, j] = 1.0
            else:
                mask[i, j] = 0.0  # neither a positive nor a clean negative
        return labels, mask

    def train(self, pairs: Sequence[AlignedPair], epochs: int = 10, batch_size: int = 8, learning_rate: float = 1e-3,
              seed: int = 0, progress: bool = True) -> list[float]:
        """BCE on every word pair of every sentence pair; returns the loss per epoch."""
        torch.manual_seed(seed)
        rng = random.Random(seed)
        keys = [p.key for p in pairs]
        vecs = dict(zip(keys, self.words.encode_pairs(keys, progress=progress)))
        examples = [(vecs[k], *self._targets(p)) for k, p in zip(keys, pairs)]
        opt = torch.optim.Adam(self.scorer.parameters(), lr=learning_rate)
        history = []
        for epoch in range(epochs):
            self.scorer.train()
            rng.shuffle(examples)
            total = 0.0
            for start in tqdm(range(0, len(examples), batch_size), desc=f"discalign {epoch + 1}", disable=not progress,
                              leave=False):
                chunk = examples[start : start + batch_size]
                losses = [nn.functional.binary_cross_entropy_with_logits(self.scorer(s, t), y, weight=m, reduction="sum")
                          / m.sum().clamp(min=1) for (s, t), y, m in chunk]
                loss = torch.stack(losses).mean()
                opt.zero_grad(set_to_none=True)
                loss.backward()
                opt.step()
                total += loss.item() * len(chunk)
            history.append(total / max(len(examples), 1))
            log.info("discalign epoch %d: loss %.4f", epoch + 1, history[-1])
        self.scorer.eval()
        return history

    @torch.inference_mode()
    def link_probabilities(self, pairs: Sequence[Pair]) -> list[torch.Tensor]:
        return [torch.sigmoid(self.scorer(s, t)).cpu() for s, t in self.words.encode_pairs(list(pairs))]

    def align(self, pairs: Sequence[Pair]) -> dict[Pair, set[Link]]:
        """Links whose probability reaches the threshold, per sentence pair."""
        unique = list(dict.fromkeys(pairs))
        return {pair: links_above(probs, self.config.threshold)
                for pair, probs in zip(unique, self.link_probabilities(unique))}

    def tune_threshold(self, dev: Sequence[AlignedPair]) -> float:
        """Set the link threshold that maximises word-alignment F1 on ``dev`` (links are rare, so
        the best cut is usually well below 0.5)."""
        from spanaug.wordalign import alignment_scores

        unique = list(dict.fromkeys(p.key for p in dev))
        by_key = dict(zip(unique, self.link_probabilities(unique)))
        best = (-1.0, self.config.threshold)
        for t in [x / 20 for x in range(1, 20)]:
            f1 = alignment_scores(dev, [links_above(by_key[p.key], t) for p in dev])["f1"]
            if f1 > best[0]:
                best = (f1, t)
        self.config.threshold = best[1]
        log.info("discalign threshold %.2f (dev word F1 %.3f)", best[1], best[0])
        return best[1]


def links_above(probs: torch.Tensor, threshold: float) -> set[Link]:
    """The (source, target) cells of a link-probability matrix at or above ``threshold``."""
    return {(int(i), int(j)) for i, j in (probs >= threshold).nonzero().tolist()}


def pairs_of(instances: Sequence[Instance]) -> list[Pair]:
    return list(dict.fromkeys(pair_key(i) for i in instances))


def gold_links(gold: Sequence[AlignedPair]) -> dict[Pair, AlignedPair]:
    return {p.key: p for p in gold}


# ---------------------------------------------------------------- Tables 1 and 2


def run_comparison(instances: Sequence[Instance], gold_pairs: Sequence[AlignedPair], encoder: str, out_dir: Path | str,
                   extra_text: Sequence[tuple[Sequence[str], Sequence[str]]] = (), fa_cfg: FastAlignConfig | None = None,
                   epochs: int = 10, seed: int = 0, k: int = 5, device: str | None = "auto") -> list[dict[str, Any]]:
    """FastAlign, DiscAlign and the span aligner on one held-out split: soft/exact span scores + AER.

    Instances are split by sentence pair as in the ablations; DiscAlign and the span aligner learn
    from the training pairs only, FastAlign (unsupervised) from all text plus ``extra_text``.
    """
    from spanaug.align import TrainConfig, span_metrics, train_aligner
    from spanaug.align_eval import plot_ablation, split_by_pair
    from spanaug.wordalign import alignment_scores

    out_dir = Path(out_dir)
    out_dir.mkdir(parents=True, exist_ok=True)
    train, dev, test = split_by_pair(instances, seed=seed)
    by_pair = gold_links(gold_pairs)
    test_pairs = pairs_of(test)
    held_out = set(test_pairs) | set(pairs_of(dev))
    gold_test = [by_pair[p] for p in test_pairs if p in by_pair]
    gold = [i.target_span for i in test]
    rows = []

    def record(system: str, preds: Sequence[tuple[int, int] | None], links: dict[Pair, set[Link]] | None) -> None:
        row: dict[str, Any] = {"system": system, **span_metrics(gold, preds)}
        if links is not None and gold_test:
            words = alignment_scores(gold_test, [links[p.key] for p in gold_test])
            row.update({"aer": words["aer"], "word_f1": words["f1"]})
        else:
            row.update({"aer": None, "word_f1": None})
        rows.append(row)
        log.info("%s: %s", system, row)

    all_pairs = list(dict.fromkeys(pairs_of(instances) + list(by_pair)))
    fa_links = fast_align(all_pairs, extra_text, fa_cfg)
    record("FastAlign", project_instances(test, fa_links), fa_links)

    disc = DiscAligner(DiscAlignConfig(encoder=encoder), device=device)
    disc.train([p for key, p in by_pair.items() if key not in held_out], epochs=epochs, seed=seed, progress=False)
    dev_gold = [by_pair[p] for p in pairs_of(dev) if p in by_pair]
    if dev_gold:
        disc.tune_threshold(dev_gold)
    disc_links = disc.align(test_pairs)  # gold_test's pairs are among them
    record("DiscAlign", project_instances(test, disc_links), disc_links)

    aligner, _ = train_aligner(train, AlignerConfig(encoder=encoder, k=k), TrainConfig(epochs=epochs, seed=seed),
                               dev=dev, device=device, progress=False)
    record("span aligner (ours)", [p for p, _ in aligner.predict(test)], None)

    artifacts.write_csv(rows, out_dir / "comparison.csv")
    plot_ablation(rows, out_dir / "comparison.png", title="Span alignment: word aligners vs span aligner")
    with artifacts.atomic_path(out_dir / "comparison.json") as tmp:
        tmp.write_text(json.dumps({"train": len(train), "dev": len(dev), "test": len(test),
                                   "gold_test_pairs": len(gold_test), "encoder": encoder, "table": rows}, indent=2))
    return rows


def write_links(links: dict[Pair, set[Link]], path: Path | str) -> None:
    """Links per pair as Edinburgh++-format JSON (usable as DiscAlign pre-training data)."""
    write_aligned_json((AlignedPair(str(n), list(src), list(tgt), pair_links, set(pair_links))
                        for n, ((src, tgt), pair_links) in enumerate(links.items())), path)
