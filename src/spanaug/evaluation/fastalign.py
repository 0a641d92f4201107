"""FastAlign (Dyer et al. 2013), in-process through systran-align or as the user's binaries."""

from __future__ import annotations

import shutil
import subprocess
import tempfile
from collections.abc import Iterable, Sequence
from pathlib import Path
from typing import Any

from spanaug.core.aligner_settings import FastAlignSettings
from spanaug.core.errors import ConfigError, InputError
from spanaug.core.files import iter_lines
from spanaug.core.text import is_token
from spanaug.evaluation.word_alignment import Pair, grow_diag_final_and, parse_pharaoh
from spanaug.pipeline.aligner.word_aligned import Link

#: fast_align's corpus line separates the two sentences with this token.
SEPARATOR = "|||"


def _norm(tokens: Sequence[str], lowercase: bool) -> list[str]:
    """Tokens as fast_align's whitespace-separated corpus can hold them: whitespace inside a token
    becomes '_' (so the token count stays), NUL (which the C library reads as the end of the token,
    and crashes) becomes U+FFFD, and a token that is the separator is escaped."""
    out = []
    for token in tokens:
        token = "_".join((token.lower() if lowercase else token).replace("\0", "\ufffd").split())
        out.append("<|||>" if token == SEPARATOR else token)
    return out


def check_pairs(pairs: Sequence[tuple[Sequence[str], Sequence[str]]], origin: str) -> None:
    """Refuse what crashes the fast_align library (signal 11): a side with no tokens, or a token that
    is empty or only whitespace. Readers reject these with the file and line first; this guards the
    library against every other caller (``origin`` names the data)."""
    for n, (src, tgt) in enumerate(pairs):
        for side, tokens in (("source", src), ("target", tgt)):
            if not tokens or not all(is_token(t) for t in tokens):
                raise InputError(
                    origin,
                    f"sentence pair {n}",
                    f"{side} tokens {list(tokens)!r} (fast_align needs at least one token, none empty or blank)",
                )


def read_text_pairs(path: Path | str) -> list[tuple[list[str], list[str]]]:
    """Extra training text: ``source ||| target`` or ``source<TAB>target`` lines, whitespace-tokenised."""
    pairs = []
    for lineno, line in iter_lines(path):
        if not line.strip():
            continue
        parts = line.split(" ||| ") if " ||| " in line else line.split("\t")
        if len(parts) != 2 or not parts[0].split() or not parts[1].split():
            raise InputError(path, lineno, "expected 'source ||| target' or 'source<TAB>target', both sides non-empty")
        pairs.append((parts[0].split(), parts[1].split()))
    return pairs


def fast_align(
    eval_pairs: Sequence[Pair],
    training_pairs: Iterable[tuple[Sequence[str], Sequence[str]]] = (),
    cfg: FastAlignSettings | None = None,
    origin: str = "the sentence pairs",
) -> dict[Pair, set[Link]]:
    """Symmetrised FastAlign links for ``eval_pairs``, trained on them plus ``training_pairs``."""
    cfg = cfg or FastAlignSettings()
    training_pairs = list(training_pairs)
    check_pairs(eval_pairs, origin)
    check_pairs(training_pairs, f"{origin} (extra training text)")
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


def _fast_align_inprocess(
    text: Path, pairs: Sequence[tuple[list[str], list[str]]], cfg: FastAlignSettings, tmp: Path
) -> list[set[Link]]:
    # systran-align trains both directions and returns links symmetrised by the library; its
    # directional alignments are not exposed (use fast_align_bin for the paper's exact toolchain).
    import systran_align

    fwd, bwd = str(tmp / "fwd.probs"), str(tmp / "bwd.probs")
    systran_align.generate_alignment_probabilities(
        str(text), fwd, bwd, iterations=cfg.iterations, favor_diagonal=True, optimize_tension=True
    )
    aligner = systran_align.Aligner(fwd, bwd)
    results = aligner.align_batch([s for s, _ in pairs], [t for _, t in pairs])
    return [set(map(tuple, r["alignments"])) for r in results]


def _tool(name: str | None, key: str) -> str:
    path = shutil.which(name) if name else None
    if not path:
        raise ConfigError(f"{key}: {name!r} is not an executable file or a command on PATH")
    return path


def _run(args: list[str], **kwargs: Any) -> subprocess.CompletedProcess:
    """Run the user's tool; its failure (or its death by a signal) is one error naming it."""
    result = subprocess.run(args, check=False, **kwargs)
    if result.returncode:
        how = f"signal {-result.returncode}" if result.returncode < 0 else f"exit status {result.returncode}"
        raise ConfigError(f"{args[0]} failed ({how}) on {args[2]}")
    return result


def _fast_align_subprocess(text: Path, n_eval: int, cfg: FastAlignSettings, tmp: Path) -> list[set[Link]]:
    """``fast_align -d -o -v`` both ways, then ``atools -c grow-diag-final-and`` (or ours without atools)."""
    exe = _tool(cfg.fast_align_bin, "baselines.fastalign.fast_align_bin")
    directions = {}
    for name, extra in (("forward", []), ("reverse", ["-r"])):
        out = tmp / f"{name}.align"
        with open(out, "w") as handle:
            _run(
                [exe, "-i", str(text), "-d", "-o", "-v", "-I", str(cfg.iterations), *extra],
                stdout=handle,
                stderr=subprocess.DEVNULL,
            )
        directions[name] = out
    if cfg.atools_bin:
        atools = _tool(cfg.atools_bin, "baselines.fastalign.atools_bin")
        result = _run(
            [atools, "-i", str(directions["forward"]), "-j", str(directions["reverse"]), "-c", "grow-diag-final-and"],
            capture_output=True,
            text=True,
        )
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
