"""FastAlign (Dyer et al. 2013), in-process through systran-align or as the user's binaries.
"""

from __future__ import annotations

import shutil
import subprocess
import tempfile
from collections.abc import Iterable, Sequence
from pathlib import Path

from spanaug.core.config import FastAlignSettings
from spanaug.core.errors import ConfigError, InputError
from spanaug.evaluation.word_alignment import Pair, grow_diag_final_and, parse_pharaoh
from spanaug.pipeline.aligner.word_aligned import Link


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
               cfg: FastAlignSettings | None = None) -> dict[Pair, set[Link]]:
    """Symmetrised FastAlign links for ``eval_pairs``, trained on them plus ``training_pairs``."""
    cfg = cfg or FastAlignSettings()
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


def _fast_align_inprocess(text: Path, pairs: Sequence[tuple[list[str], list[str]]], cfg: FastAlignSettings,
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


def _fast_align_subprocess(text: Path, n_eval: int, cfg: FastAlignSettings, tmp: Path) -> list[set[Link]]:
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
