"""``spanaug <stage> ...``: every pipeline stage as a plain command (Snakemake rules call these)."""

from __future__ import annotations

import argparse
import json
import logging
import sys
from pathlib import Path

from spanaug.core.artifacts import SCHEMAS
from spanaug.core.errors import SpanaugError

log = logging.getLogger("spanaug")


def _write_json(obj: object, path: str | None) -> None:
    from spanaug.core.files import atomic_path

    text = json.dumps(obj, indent=2)
    if path:
        with atomic_path(path) as tmp:
            tmp.write_text(text + "\n")
    else:
        print(text)


# ---------------------------------------------------------------- data stages


def cmd_import(a: argparse.Namespace) -> None:
    from spanaug.pipeline.importers import import_corpus

    stats = import_corpus(a.format, a.input, a.out, max_tokens=a.max_tokens, parts=a.parts)
    _write_json(stats.as_dict(), a.stats)


def cmd_seeds(a: argparse.Namespace) -> None:
    from spanaug.core import artifacts
    from spanaug.pipeline.seeds import select_seeds

    table = artifacts.read_table(a.sentences, artifacts.SENTENCES)
    seeds, report = select_seeds(table, a.mode, a.n_frames, a.lus_per_frame, a.per_lu)
    artifacts.write_table(seeds, a.out, artifacts.SENTENCES)
    _write_json(report, a.report)


def cmd_shard(a: argparse.Namespace) -> None:
    from spanaug.pipeline.iterations import init_shards

    counts = init_shards(a.seeds, a.out)
    log.info("iteration 0: %d seeds in %d shards %s", sum(counts), len(counts), counts)


def cmd_constraints(a: argparse.Namespace) -> None:
    from spanaug.pipeline.constraints import expand_stage

    n = expand_stage(a.chain, a.out, a.iteration, not a.no_case, not a.no_inflections)
    log.info("iteration %d: %d requests", a.iteration, n)


def cmd_paraphrase(a: argparse.Namespace) -> None:
    from spanaug.pipeline.paraphraser.hf_backend import DecodeConfig
    from spanaug.pipeline.paraphraser.stage import paraphrase_stage

    cfg = DecodeConfig(mode=a.mode, beam_size=a.beam_size, return_top=a.return_top, top_k=a.top_k,
                       num_samples=a.num_samples, seed=a.seed, batch_size=a.batch_size,
                       max_new_tokens=a.max_new_tokens, prefix=a.prefix)
    paraphrase_stage(a.requests, a.out, a.model, cfg, device=a.device, dtype=a.dtype, stats_path=a.stats,
                     backend=a.backend)


def cmd_select(a: argparse.Namespace) -> None:
    from spanaug.pipeline.iterations import select_stage

    select_stage(a.aligned, a.out)


def cmd_gather(a: argparse.Namespace) -> None:
    from spanaug.core import artifacts

    n = artifacts.concat_artifacts(a.inputs, a.out, artifacts.SCHEMAS[a.schema])
    log.info("gathered %d rows into %s", n, a.out)


def cmd_assemble(a: argparse.Namespace) -> None:
    from spanaug.pipeline.iterations import assemble

    n = assemble(a.inputs, a.out)
    log.info("augmented dataset: %d rows in %s", n, a.out)


def cmd_stats(a: argparse.Namespace) -> None:
    from spanaug.evaluation.statistics import StatsConfig, write_stats

    cfg = StatsConfig(bleu_sample=a.bleu_sample, lexicon=a.lexicon, pos_tagger=a.pos_tagger, pos_sample=a.pos_sample)
    write_stats(a.augmented, a.seeds, a.out_json, a.out_csv, a.out_plot, cfg, a.out_dist_plot)


def _read_filters(text: str | None) -> dict | None:
    """``--filters``: inline JSON or a JSON file (None: the paper's Table 4)."""
    from spanaug.core.errors import ConfigError

    if not text:
        return None
    inline = text.lstrip().startswith("{")
    if not inline and not Path(text).is_file():
        raise ConfigError(f"--filters: {text!r} is neither JSON nor a file")
    try:
        return json.loads(text if inline else Path(text).read_text())
    except json.JSONDecodeError as exc:
        raise ConfigError(f"--filters: malformed JSON ({exc.msg})") from None


def _filter_bounds(a: argparse.Namespace) -> dict | None:
    """The bounds of the filter ``--filter`` names (None: every aligned output)."""
    from spanaug.core.errors import ConfigError
    from spanaug.evaluation.filtering import DEFAULT_FILTERS, check_filters

    if not a.filter or a.filter == "none":
        return None
    filters = _read_filters(a.filters) or DEFAULT_FILTERS
    check_filters(filters)
    if a.filter not in filters:
        raise ConfigError(f"--filter {a.filter!r} is not a defined filter: {sorted(filters)}")
    return filters[a.filter]


def cmd_filter(a: argparse.Namespace) -> None:
    from spanaug.evaluation.filtering import ClassifierConfig, filter_stage

    filters = _read_filters(a.filters)
    rows = filter_stage(a.augmented, a.seeds, a.out_dir, filters, a.judgments,
                        ClassifierConfig(downweight=a.downweight, seed=a.seed))
    for row in rows:
        log.info("%-40s %6d outputs (x%.2f)", row["filter"], row["outputs"], row["multiple_over_seeds"] or 0)


def cmd_human_export(a: argparse.Namespace) -> None:
    from spanaug.evaluation.human_eval import export_task

    definitions = None
    if a.framenet:
        from spanaug.pipeline.framenet import framenet_definitions

        definitions = framenet_definitions(a.framenet)
    counts = export_task(a.augmented, a.sentences, a.out_task, a.out_key, a.n_items, a.seed, definitions)
    log.info("annotation task: %(items)d items (%(skipped_without_controls)d outputs had no gold controls)", counts)


def cmd_human_simulate(a: argparse.Namespace) -> None:
    from spanaug.evaluation.human_eval import simulate_judgments

    n = simulate_judgments(a.key, a.out, a.raters, a.seed)
    log.warning("wrote %d SIMULATED judgment rows to %s (no person judged these)", n, a.out)


def cmd_human_import(a: argparse.Namespace) -> None:
    from spanaug.evaluation.human_eval import import_judgments

    _write_json(import_judgments(a.results, a.key, a.out_dir), None)


def _frameid_sentences(paths: list[str]) -> list:
    from spanaug.downstream.frameid.data import read_training_file

    return [sent for path in paths for sent in read_training_file(path)]


def _frameid_lexicon(path: str | None) -> dict | None:
    """``--lexicon``: frame -> LUs from a lexicon JSON or a FrameNet release (None when unset)."""
    if not path:
        return None
    from spanaug.pipeline.framenet import read_lexicon

    return read_lexicon(path)


def cmd_frameid_train(a: argparse.Namespace) -> None:
    from spanaug.downstream.frameid.training import FrameIdTrainConfig, train_frameid

    dev = _frameid_sentences([a.dev]) if a.dev else None
    model, summary = train_frameid(_frameid_sentences(a.train), a.encoder,
                                   FrameIdTrainConfig(epochs=a.epochs, seed=a.seed, batch_size=a.batch_size,
                                                      learning_rate=a.learning_rate),
                                   dev=dev, glove=a.glove, device=a.device, lexicon=_frameid_lexicon(a.lexicon))
    model.save_pretrained(a.out)
    _write_json(summary, str(Path(a.out) / "training_summary.json"))


def cmd_frameid_eval(a: argparse.Namespace) -> None:
    from spanaug.downstream.frameid.baseline import triple_scores
    from spanaug.downstream.frameid.model import FrameIdentifier

    test = _frameid_sentences([a.test])
    model = FrameIdentifier.from_pretrained(a.model, device=a.device)
    print(json.dumps(triple_scores(test, model.predict(test))))


def cmd_frameid_baseline(a: argparse.Namespace) -> None:
    from spanaug.downstream.frameid.baseline import LexiconBaseline, triple_scores

    test = _frameid_sentences([a.test])
    scores = triple_scores(test, LexiconBaseline().fit(_frameid_sentences(a.train)).predict(test))
    if a.out:
        _write_json(scores, a.out)
    print(json.dumps(scores))


def cmd_frameid_split(a: argparse.Namespace) -> None:
    from spanaug.downstream.frameid.data import split_conll, split_sentences

    if a.conll:
        _write_json(split_conll(a.conll, a.out_dir, a.dev_share, a.test_share), None)
    else:
        _write_json(split_sentences(a.sentences, a.out_dir, a.dev_share, a.test_share, a.parts), None)


def cmd_frameid_point(a: argparse.Namespace) -> None:
    from spanaug.core import artifacts
    from spanaug.downstream.augmenter_comparison import run_point
    from spanaug.downstream.augmenters import GecaConfig
    from spanaug.downstream.frameid.training import FrameIdTrainConfig

    examples = artifacts.read_table(a.examples, artifacts.EXAMPLES).to_pylist() if a.examples else None
    point = run_point(_frameid_sentences(a.train), _frameid_sentences([a.test]), a.fraction, a.seed, a.augmenter,
                      a.encoder, FrameIdTrainConfig(epochs=a.epochs, batch_size=a.batch_size,
                                                    learning_rate=a.learning_rate),
                      examples=examples, dev=_frameid_sentences([a.dev]) if a.dev else None,
                      lexicon=_frameid_lexicon(a.lexicon), geca=GecaConfig(window=a.geca_window),
                      device=a.device)
    _write_json(point, a.out)


def cmd_frameid_curves(a: argparse.Namespace) -> None:
    from spanaug.downstream.augmenter_comparison import curves_stage

    for row in curves_stage(a.points, a.out_table, a.out_plot):
        log.info("%-14s %5.0f%%: F1 %.3f +- %.3f (%d seeds)", row["augmenter"], 100 * row["fraction"], row["f1_mean"],
                 row["f1_std"], row["seeds"])


# ---------------------------------------------------------------- augmenters


def _augmented_and_seeds(a: argparse.Namespace) -> tuple:
    from spanaug.core import artifacts

    return (artifacts.read_table(a.augmented, artifacts.AUGMENTED),
            artifacts.read_table(a.seeds, artifacts.SENTENCES))


def _write_examples(rows: list, counts: dict, a: argparse.Namespace) -> None:
    from spanaug.core import artifacts

    artifacts.write_table(rows, a.out, artifacts.EXAMPLES)
    _write_json({"examples": len(rows), **counts}, a.counts)


def cmd_augment_paraphrastic(a: argparse.Namespace) -> None:
    from spanaug.downstream.augmenters import paraphrastic_examples

    rows = paraphrastic_examples(*_augmented_and_seeds(a), _filter_bounds(a))
    _write_examples(rows, {"filter": a.filter or "none"}, a)


def cmd_augment_lexsub(a: argparse.Namespace) -> None:
    from spanaug.core.errors import ConfigError
    from spanaug.core.tagging import load_tagger
    from spanaug.downstream.augmenters import lexsub_examples

    tagger, why = load_tagger(a.pos_tagger)
    if tagger is None:
        raise ConfigError(f"lexsub needs a POS tagger: {why}")
    rows, counts = lexsub_examples(*_augmented_and_seeds(a), tagger, _filter_bounds(a))
    _write_examples(rows, {"filter": a.filter or "none", "pos_tagger": a.pos_tagger, **counts}, a)


def cmd_augment_geca(a: argparse.Namespace) -> None:
    from spanaug.downstream.augmenters import GecaConfig, geca_examples

    rows, counts = geca_examples(_frameid_sentences(a.train), GecaConfig(
        window=a.window, max_fragments_per_environment=a.max_fragments_per_environment,
        max_templates_per_pair=a.max_templates_per_pair, max_outputs=a.max_outputs, seed=a.seed))
    _write_examples(rows, counts, a)


def cmd_augment_graph(a: argparse.Namespace) -> None:
    from spanaug.core.files import write_jsonl
    from spanaug.downstream.augmenters import chain_members, graph_instances

    instances, counts = graph_instances(chain_members(*_augmented_and_seeds(a), _filter_bounds(a)))
    write_jsonl((i.as_json() for i in instances), a.out)
    _write_json({"filter": a.filter or "none", **counts}, a.counts)


def cmd_demo_corpus(a: argparse.Namespace) -> None:
    from spanaug.pipeline.framenet_writer import write_release_from_yaml

    write_release_from_yaml(a.spec, a.out)


# ---------------------------------------------------------------- models


def cmd_paraphraser_train(a: argparse.Namespace) -> None:
    from spanaug.pipeline.paraphraser.training import (
        ParaphraserConfig,
        train_paraphraser,
    )

    cfg = ParaphraserConfig(
        vocab_size=a.vocab_size, d_model=a.d_model, encoder_layers=a.encoder_layers, decoder_layers=a.decoder_layers,
        attention_heads=a.attention_heads, ffn_dim=a.ffn_dim, learning_rate=a.learning_rate,
        warmup_steps=a.warmup_steps, batch_size=a.batch_size, max_steps=a.max_steps, max_minutes=a.max_minutes,
        checkpoint_every=a.checkpoint_every, label_smoothing=a.label_smoothing, seed=a.seed)
    train_paraphraser(a.bitext, a.out, cfg, device=a.device)


def cmd_align_train(a: argparse.Namespace) -> None:
    from spanaug.pipeline.aligner.instances import read_instances
    from spanaug.pipeline.aligner.model import AlignerConfig
    from spanaug.pipeline.aligner.training import TrainConfig, train_aligner

    cfg = AlignerConfig(encoder=a.encoder, features=tuple(a.features.split(",")), loss=a.loss, k=a.k,
                        normalize_spans=not a.no_normalize, finetune_layers=a.finetune_layers)
    train = read_instances(a.train)
    dev = read_instances(a.dev) if a.dev else None
    extra = [inst for path in a.extra for inst in read_instances(path)]
    tcfg = TrainConfig(epochs=a.epochs, seed=a.seed, learning_rate=a.learning_rate,
                       encoder_learning_rate=a.encoder_learning_rate)
    aligner, summary = train_aligner(train, cfg, tcfg, dev=dev, device=a.device, extra=extra)
    aligner.save_pretrained(a.out)
    _write_json(summary, str(Path(a.out) / "training_summary.json"))


def cmd_align_predict(a: argparse.Namespace) -> None:
    from spanaug.core.files import write_jsonl
    from spanaug.pipeline.aligner.instances import read_instances
    from spanaug.pipeline.aligner.model import SpanAligner

    aligner = SpanAligner.from_pretrained(a.model, device=a.device)
    insts = read_instances(a.instances)
    preds = aligner.predict(insts, progress=True)
    write_jsonl(({"id": i.id, "target_span": list(s) if s else None, "score": sc} for i, (s, sc) in zip(insts, preds)), a.out)


def cmd_align_eval(a: argparse.Namespace) -> None:
    from spanaug.core.errors import InputError
    from spanaug.core.metrics import span_metrics
    from spanaug.pipeline.aligner.instances import read_instances, read_predictions

    gold = read_instances(a.gold)
    preds = read_predictions(a.pred)
    missing = [g.id for g in gold if g.id not in preds]
    if missing:
        raise InputError(a.pred, None, f"no prediction for {len(missing)} gold instance(s), e.g. {missing[0]!r}")
    print(json.dumps(span_metrics([g.target_span for g in gold], [preds[g.id][0] for g in gold])))


def cmd_align_paraphrases(a: argparse.Namespace) -> None:
    from spanaug.pipeline.aligner.stage import align_stage

    align_stage(a.model, a.paraphrases, a.out, encoder=a.encoder, device=a.device, batch_size=a.batch_size)


def cmd_align_ablate(a: argparse.Namespace) -> None:
    from spanaug.evaluation.aligner_ablation import run_ablation
    from spanaug.pipeline.aligner.instances import read_instances

    summary = run_ablation(read_instances(a.data), a.encoder, a.out_dir, epochs=a.epochs, seed=a.seed, k=a.k,
                           device=a.device, finetune_layers=a.finetune_layers, extra_reversed=a.extra_reversed,
                           systems=a.systems.split(",") if a.systems else None,
                           extra_instances=read_instances(a.extra_instances) if a.extra_instances else ())
    for row in summary["table"]:
        log.info("%-20s soft F1 %.3f  exact F1 %.3f", row["system"], row["soft_f1"], row["exact_f1"])


def cmd_align_make_instances(a: argparse.Namespace) -> None:
    from spanaug.core.files import write_jsonl
    from spanaug.pipeline.aligner.instances import (
        instances_from_bitext,
        iter_pairs_from_bitext,
    )

    insts = instances_from_bitext(iter_pairs_from_bitext(a.bitext), prefix=Path(a.bitext).stem)
    n = write_jsonl((i.as_json() for i in insts), a.out)
    log.info("%d span instances from %s", n, a.bitext)
    if a.pairs_out:
        from spanaug.pipeline.aligner.word_aligned import (
            pairs_from_bitext,
            write_aligned_json,
        )

        write_aligned_json(pairs_from_bitext(iter_pairs_from_bitext(a.bitext), prefix=Path(a.bitext).stem), a.pairs_out)


def cmd_align_import(a: argparse.Namespace) -> None:
    from spanaug.core.files import write_jsonl
    from spanaug.pipeline.aligner.word_aligned import import_instances

    insts = import_instances(a.input, a.format, null_share=a.null_share, seed=a.seed)
    n = write_jsonl((i.as_json() for i in insts), a.out)
    log.info("%d span instances (%d with no counterpart) from %s", n, sum(i.target_span is None for i in insts), a.input)


# ---------------------------------------------------------------- baselines


def _fastalign_config(a: argparse.Namespace):  # noqa: ANN202
    from spanaug.evaluation.fastalign import FastAlignConfig

    return FastAlignConfig(lowercase=not a.no_lowercase, iterations=a.iterations, fast_align_bin=a.fast_align_bin,
                           atools_bin=a.atools_bin)


def _extra_text(a: argparse.Namespace) -> list:
    from spanaug.evaluation.fastalign import read_text_pairs

    return [pair for path in a.extra_text for pair in read_text_pairs(path)]


def cmd_baseline_fastalign(a: argparse.Namespace) -> None:
    from spanaug.core.files import write_jsonl
    from spanaug.evaluation.fastalign import fast_align
    from spanaug.evaluation.word_alignment import (
        pairs_of,
        span_predictions,
        write_links,
    )
    from spanaug.pipeline.aligner.instances import read_instances

    insts = read_instances(a.instances)
    links = fast_align(pairs_of(insts), _extra_text(a), _fastalign_config(a))
    write_jsonl(span_predictions(insts, links), a.out)
    if a.links_out:
        write_links(links, a.links_out)


def cmd_discalign_train(a: argparse.Namespace) -> None:
    from spanaug.evaluation.discalign import DiscAlignConfig, DiscAligner
    from spanaug.pipeline.aligner.word_aligned import read_aligned_json

    model = DiscAligner(DiscAlignConfig(encoder=a.encoder, possible_as_positive=a.possible_as_positive,
                                        threshold=0.5 if a.threshold is None else a.threshold), device=a.device)
    history: dict = {}
    if a.pretrain:
        history["pretrain_loss"] = model.train(read_aligned_json(a.pretrain), epochs=a.pretrain_epochs, seed=a.seed)
    gold = read_aligned_json(a.gold)
    n_dev = round(len(gold) * a.dev_share) if a.threshold is None else 0
    history["loss"] = model.train(gold[n_dev:], epochs=a.epochs, seed=a.seed)
    if n_dev:
        history["threshold"] = model.tune_threshold(gold[:n_dev])
    model.save_pretrained(a.out)
    _write_json(history, str(Path(a.out) / "training_summary.json"))


def cmd_discalign_predict(a: argparse.Namespace) -> None:
    from spanaug.core.files import write_jsonl
    from spanaug.evaluation.discalign import DiscAligner
    from spanaug.evaluation.word_alignment import (
        pairs_of,
        span_predictions,
        write_links,
    )
    from spanaug.pipeline.aligner.instances import read_instances

    insts = read_instances(a.instances)
    links = DiscAligner.from_pretrained(a.model, device=a.device).align(pairs_of(insts))
    write_jsonl(span_predictions(insts, links), a.out)
    if a.links_out:
        write_links(links, a.links_out)


def cmd_baseline_compare(a: argparse.Namespace) -> None:
    from spanaug.evaluation.aligner_comparison import run_comparison
    from spanaug.pipeline.aligner.instances import read_instances
    from spanaug.pipeline.aligner.word_aligned import read_aligned_json

    rows = run_comparison(read_instances(a.instances), read_aligned_json(a.gold_pairs), a.encoder, a.out_dir,
                          extra_text=_extra_text(a), fa_cfg=_fastalign_config(a), epochs=a.epochs, seed=a.seed, k=a.k,
                          device=a.device)
    for row in rows:
        log.info("%-20s soft F1 %.3f  exact F1 %.3f  AER %s", row["system"], row["soft_f1"], row["exact_f1"], row["aer"])


def _fastalign_options(s: argparse.ArgumentParser) -> None:
    s.add_argument("--extra-text", nargs="*", default=[], metavar="FILE",
                   help="more training text for FastAlign: 'source ||| target' or TSV lines")
    s.add_argument("--no-lowercase", action="store_true")
    s.add_argument("--iterations", type=int, default=5)
    s.add_argument("--fast-align-bin", help="a fast_align binary, run as a subprocess (default: in-process systran-align)")
    s.add_argument("--atools-bin", help="atools binary for grow-diag-final-and (default: our implementation)")


# ---------------------------------------------------------------- parser


def build_parser() -> argparse.ArgumentParser:
    p = argparse.ArgumentParser(prog="spanaug", description=__doc__)
    p.add_argument("-v", "--verbose", action="store_true", help="debug logging")
    sub = p.add_subparsers(dest="command", required=True)

    s = sub.add_parser("import", help="import a corpus into the sentences artifact")
    s.add_argument("format", choices=["framenet", "conll", "jsonl"])
    s.add_argument("--input", nargs="+", required=True, help="FrameNet release dir, CoNLL or JSONL file(s)")
    s.add_argument("--out", required=True)
    s.add_argument("--stats", help="write import statistics (JSON) here")
    s.add_argument("--max-tokens", type=int, default=None)
    s.add_argument("--parts", nargs="+", default=["exemplar", "fulltext"], help="FrameNet parts to read")
    s.set_defaults(func=cmd_import)

    s = sub.add_parser("seeds", help="select the seed rows")
    s.add_argument("--sentences", required=True)
    s.add_argument("--out", required=True)
    s.add_argument("--report")
    s.add_argument("--mode", choices=["all", "from_scratch"], default="all")
    s.add_argument("--n-frames", type=int, default=20)
    s.add_argument("--lus-per-frame", type=int, default=3)
    s.add_argument("--per-lu", type=int, default=3)
    s.set_defaults(func=cmd_seeds)

    s = sub.add_parser("shard", help="split the seeds into iteration-0 shards")
    s.add_argument("--seeds", required=True)
    s.add_argument("--out", nargs="+", required=True, help="one path per shard")
    s.set_defaults(func=cmd_shard)

    s = sub.add_parser("constraints", help="expand constraints: chain shard -> requests")
    s.add_argument("--chain", required=True)
    s.add_argument("--out", required=True)
    s.add_argument("--iteration", type=int, required=True)
    s.add_argument("--no-case", action="store_true", help="do not add case variants")
    s.add_argument("--no-inflections", action="store_true", help="do not add inflections")
    s.set_defaults(func=cmd_constraints)

    s = sub.add_parser("paraphrase", help="constrained decoding: requests -> paraphrases")
    s.add_argument("--requests", required=True)
    s.add_argument("--out", required=True)
    s.add_argument("--model", required=True, help="HF seq2seq model name or path")
    s.add_argument("--backend", choices=["hf", "ct2"], default="hf", help="transformers or CTranslate2")
    s.add_argument("--prefix", default="")
    s.add_argument("--mode", choices=["beam", "sample"], default="beam")
    s.add_argument("--beam-size", type=int, default=20)
    s.add_argument("--return-top", type=int, default=3)
    s.add_argument("--top-k", type=int, default=20)
    s.add_argument("--num-samples", type=int, default=3)
    s.add_argument("--seed", type=int, default=0)
    s.add_argument("--batch-size", type=int, default=None)
    s.add_argument("--max-new-tokens", type=int, default=None)
    s.add_argument("--device", default="auto")
    s.add_argument("--dtype", default="auto")
    s.add_argument("--stats")
    s.set_defaults(func=cmd_paraphrase)

    s = sub.add_parser("select", help="keep the best-aligned beam per seed")
    s.add_argument("--aligned", required=True)
    s.add_argument("--out", required=True)
    s.set_defaults(func=cmd_select)

    s = sub.add_parser("gather", help="merge shards of one artifact type")
    s.add_argument("--inputs", nargs="+", required=True)
    s.add_argument("--out", required=True)
    s.add_argument("--schema", default="chain", choices=sorted(SCHEMAS))
    s.set_defaults(func=cmd_gather)

    s = sub.add_parser("assemble", help="the augmented dataset from every iteration's outputs")
    s.add_argument("--inputs", nargs="+", required=True)
    s.add_argument("--out", required=True)
    s.set_defaults(func=cmd_assemble)

    s = sub.add_parser("stats", help="intrinsic statistics of the augmented dataset")
    s.add_argument("--augmented", required=True)
    s.add_argument("--seeds", required=True)
    s.add_argument("--out-json", required=True)
    s.add_argument("--out-csv", required=True)
    s.add_argument("--out-plot")
    s.add_argument("--out-dist-plot", help="span length and position-difference histograms")
    s.add_argument("--bleu-sample", type=int, default=2000)
    s.add_argument("--lexicon", help="lexicon JSON or FrameNet release: from-scratch LU precision/recall")
    s.add_argument("--pos-tagger", help="'lexicon' or 'spacy:<model>' for POS diversity (Table 3)")
    s.add_argument("--pos-sample", type=int, default=5000)
    s.set_defaults(func=cmd_stats)

    s = sub.add_parser("filter", help="heuristic filters (Table 4) and the neural P/R-classifiers")
    s.add_argument("--augmented", required=True)
    s.add_argument("--seeds", required=True)
    s.add_argument("--out-dir", required=True)
    s.add_argument("--filters", help="JSON text or file: name -> {max_iteration, max_paraphrase_score, min_aligner_score}"
                                     " (default: the paper's Table 4)")
    s.add_argument("--judgments", help="CSV/Parquet of output_id, score (0/1 or 0-100)")
    s.add_argument("--downweight", type=float, default=0.5, help="weight of the down-weighted class")
    s.add_argument("--seed", type=int, default=0)
    s.set_defaults(func=cmd_filter)

    hum = sub.add_parser("human", help="the human-evaluation loop").add_subparsers(dest="sub", required=True)
    s = hum.add_parser("export", help="an annotation task CSV and its key")
    s.add_argument("--augmented", required=True)
    s.add_argument("--sentences", required=True, help="the imported corpus: gold controls and examples")
    s.add_argument("--out-task", required=True)
    s.add_argument("--out-key", required=True)
    s.add_argument("--n-items", type=int, default=100)
    s.add_argument("--seed", type=int, default=0)
    s.add_argument("--framenet", help="FrameNet release directory for frame definitions")
    s.set_defaults(func=cmd_human_export)
    s = hum.add_parser("simulate", help="simulated crowd results for a task key (demo and tests only)")
    s.add_argument("--key", required=True)
    s.add_argument("--out", required=True)
    s.add_argument("--raters", type=int, default=3)
    s.add_argument("--seed", type=int, default=0)
    s.set_defaults(func=cmd_human_simulate)
    s = hum.add_parser("import", help="acceptance, agreement and judgments for the neural filter")
    s.add_argument("--results", required=True, help="crowd results: item_id, worker_id, candidate_N_score")
    s.add_argument("--key", required=True)
    s.add_argument("--out-dir", required=True)
    s.set_defaults(func=cmd_human_import)

    fid = sub.add_parser("frameid", help="the downstream Frame ID model").add_subparsers(dest="sub", required=True)
    s = fid.add_parser("train")
    s.add_argument("--train", nargs="+", required=True, help="open-SESAME CoNLL or Parquet (sentences or augmented)")
    s.add_argument("--encoder", required=True)
    s.add_argument("--out", required=True)
    s.add_argument("--dev")
    s.add_argument("--glove", help="GloVe-format word vectors")
    s.add_argument("--lexicon", help="lexicon JSON or FrameNet release: each span chooses among its lemma's frames")
    s.add_argument("--epochs", type=int, default=10)
    s.add_argument("--batch-size", type=int, default=16)
    s.add_argument("--learning-rate", type=float, default=1e-3)
    s.add_argument("--seed", type=int, default=0)
    s.add_argument("--device", default="auto")
    s.set_defaults(func=cmd_frameid_train)
    s = fid.add_parser("eval")
    s.add_argument("--model", required=True)
    s.add_argument("--test", required=True)
    s.add_argument("--device", default="auto")
    s.set_defaults(func=cmd_frameid_eval)
    s = fid.add_parser("baseline", help="most frequent frame per trigger string")
    s.add_argument("--train", nargs="+", required=True)
    s.add_argument("--test", required=True)
    s.add_argument("--out", help="also write the scores to this JSON file")
    s.set_defaults(func=cmd_frameid_baseline)
    s = fid.add_parser("split", help="train/dev/test CoNLL (contiguous sentence ranges) or Parquet (documents)")
    source = s.add_mutually_exclusive_group(required=True)
    source.add_argument("--conll", help="open-SESAME CoNLL: writes train/dev/test.conll")
    source.add_argument("--sentences", help="imported sentences Parquet: writes train/dev/test.parquet")
    s.add_argument("--parts", nargs="+", choices=("exemplar", "fulltext"), default=["exemplar", "fulltext"],
                   help="with --sentences: the corpus parts to keep")
    s.add_argument("--out-dir", required=True)
    s.add_argument("--dev-share", type=float, default=0.1)
    s.add_argument("--test-share", type=float, default=0.2)
    s.set_defaults(func=cmd_frameid_split)

    s = fid.add_parser("point", help="one point of the augmenter comparison (Figure 8)")
    s.add_argument("--train", nargs="+", required=True, help="the pool of training sentences to sample from")
    s.add_argument("--test", required=True)
    s.add_argument("--dev")
    s.add_argument("--fraction", type=float, required=True, help="share of the training sentences, in (0, 1]")
    s.add_argument("--seed", type=int, default=0)
    s.add_argument("--augmenter", default="none", choices=("none", "paraphrastic", "lexsub", "geca"))
    s.add_argument("--examples", help="the augmenter's EXAMPLES Parquet (paraphrastic, lexsub)")
    s.add_argument("--geca-window", type=int, default=1)
    s.add_argument("--encoder", required=True)
    s.add_argument("--lexicon")
    s.add_argument("--epochs", type=int, default=10)
    s.add_argument("--batch-size", type=int, default=16)
    s.add_argument("--learning-rate", type=float, default=1e-3)
    s.add_argument("--device", default="auto")
    s.add_argument("--out", required=True, help="the point's JSON result")
    s.set_defaults(func=cmd_frameid_point)
    s = fid.add_parser("curves", help="average point results over seeds: table and figure")
    s.add_argument("--points", nargs="+", required=True)
    s.add_argument("--out-table", required=True)
    s.add_argument("--out-plot", required=True)
    s.set_defaults(func=cmd_frameid_curves)

    aug = sub.add_parser("augment", help="augmenters compared downstream").add_subparsers(dest="sub", required=True)
    for name, help_text in (("paraphrastic", "the pipeline's outputs under a named filter"),
                            ("lexsub", "aligned triggers put back into their seed sentences (POS must match)"),
                            ("graph", "span-alignment instances between all members of each paraphrase chain")):
        s = aug.add_parser(name, help=help_text)
        s.add_argument("--augmented", required=True)
        s.add_argument("--seeds", required=True)
        s.add_argument("--filter", help="a filter's name (default: every aligned output)")
        s.add_argument("--filters", help="JSON text or file defining the filters (default: the paper's Table 4)")
        s.add_argument("--out", required=True, help="EXAMPLES Parquet (graph: span instances JSONL)")
        s.add_argument("--counts", help="JSON summary (default: standard output)")
        if name == "lexsub":
            s.add_argument("--pos-tagger", default="lexicon", help="'lexicon' or 'spacy:<model>'")
        s.set_defaults(func={"paraphrastic": cmd_augment_paraphrastic, "lexsub": cmd_augment_lexsub,
                             "graph": cmd_augment_graph}[name])
    s = aug.add_parser("geca", help="Good-Enough Compositional Augmentation over trigger spans")
    s.add_argument("--train", nargs="+", required=True, help="CoNLL or Parquet sentences")
    s.add_argument("--out", required=True)
    s.add_argument("--counts")
    s.add_argument("--window", type=int, default=1, help="k: tokens each side that form an environment")
    s.add_argument("--max-fragments-per-environment", type=int, default=50)
    s.add_argument("--max-templates-per-pair", type=int, default=20)
    s.add_argument("--max-outputs", type=int, default=100_000)
    s.add_argument("--seed", type=int, default=0)
    s.set_defaults(func=cmd_augment_geca)

    s = sub.add_parser("demo-corpus", help="write a FrameNet release directory from a YAML spec")
    s.add_argument("--spec", required=True)
    s.add_argument("--out", required=True)
    s.set_defaults(func=cmd_demo_corpus)

    para = sub.add_parser("paraphraser", help="the paper's paraphraser").add_subparsers(dest="sub", required=True)
    s = para.add_parser("train", help="train SentencePiece + Transformer on a bitext TSV")
    s.add_argument("--bitext", required=True)
    s.add_argument("--out", required=True)
    s.add_argument("--vocab-size", type=int, default=32000)
    s.add_argument("--d-model", type=int, default=512)
    s.add_argument("--encoder-layers", type=int, default=6)
    s.add_argument("--decoder-layers", type=int, default=4)
    s.add_argument("--attention-heads", type=int, default=8)
    s.add_argument("--ffn-dim", type=int, default=2048)
    s.add_argument("--learning-rate", type=float, default=3e-4)
    s.add_argument("--warmup-steps", type=int, default=4000)
    s.add_argument("--label-smoothing", type=float, default=0.1)
    s.add_argument("--batch-size", type=int, default=64)
    s.add_argument("--max-steps", type=int, default=100000)
    s.add_argument("--max-minutes", type=float, default=None)
    s.add_argument("--checkpoint-every", type=int, default=1000)
    s.add_argument("--seed", type=int, default=0)
    s.add_argument("--device", default="auto")
    s.set_defaults(func=cmd_paraphraser_train)

    al = sub.add_parser("align", help="the discriminative span aligner").add_subparsers(dest="sub", required=True)
    s = al.add_parser("train")
    s.add_argument("--train", required=True)
    s.add_argument("--encoder", required=True)
    s.add_argument("--out", required=True)
    s.add_argument("--dev")
    s.add_argument("--features", default="df,mx,cue")
    s.add_argument("--loss", choices=["soft", "hard"], default="soft")
    s.add_argument("--k", type=int, default=5)
    s.add_argument("--no-normalize", action="store_true", help="raw (not L2-normalised) span vectors, as in the paper")
    s.add_argument("--epochs", type=int, default=10)
    s.add_argument("--learning-rate", type=float, default=1e-3)
    s.add_argument("--extra", nargs="*", default=[], metavar="FILE.jsonl", help="extra training instances")
    s.add_argument("--finetune-layers", type=int, default=0, help="tune the encoder's top N layers (0: frozen)")
    s.add_argument("--encoder-learning-rate", type=float, default=2e-5)
    s.add_argument("--seed", type=int, default=0)
    s.add_argument("--device", default="auto")
    s.set_defaults(func=cmd_align_train)
    s = al.add_parser("predict")
    s.add_argument("--model", required=True)
    s.add_argument("--instances", required=True)
    s.add_argument("--out", required=True)
    s.add_argument("--device", default="auto")
    s.set_defaults(func=cmd_align_predict)
    s = al.add_parser("eval")
    s.add_argument("--gold", required=True)
    s.add_argument("--pred", required=True)
    s.set_defaults(func=cmd_align_eval)
    s = al.add_parser("paraphrases", help="pipeline stage: align every beam of a paraphrases shard")
    s.add_argument("--model", required=True)
    s.add_argument("--paraphrases", required=True)
    s.add_argument("--out", required=True)
    s.add_argument("--encoder", help="override the encoder saved with the model")
    s.add_argument("--batch-size", type=int, default=64)
    s.add_argument("--device", default="auto")
    s.set_defaults(func=cmd_align_paraphrases)
    s = al.add_parser("ablate", help="Table 2 ablations, breakdowns and the memorisation split")
    s.add_argument("--data", required=True, help="span-alignment JSONL, split here by sentence pair")
    s.add_argument("--encoder", required=True)
    s.add_argument("--out-dir", required=True)
    s.add_argument("--epochs", type=int, default=10)
    s.add_argument("--seed", type=int, default=0)
    s.add_argument("--k", type=int, default=5)
    s.add_argument("--finetune-layers", type=int, default=0, help="also test tuning the encoder's top N layers")
    s.add_argument("--extra-reversed", action="store_true", help="also test adding reversed training instances")
    s.add_argument("--extra-instances", help="also test adding these span instances (e.g. `augment graph` output)")
    s.add_argument("--systems", help="comma-separated ablation rows to train (default: all of Table 2)")
    s.add_argument("--device", default="auto")
    s.set_defaults(func=cmd_align_ablate)
    s = al.add_parser("make-instances", help="span instances from a paraphrase bitext's token differences")
    s.add_argument("--bitext", required=True)
    s.add_argument("--out", required=True)
    s.add_argument("--pairs-out", help="also the diff's word alignments, as Edinburgh++ JSON")
    s.set_defaults(func=cmd_align_make_instances)
    s = al.add_parser("import-aligned", help="span instances from a word-aligned corpus (Edinburgh++ JSON) or a span TSV")
    s.add_argument("--input", required=True)
    s.add_argument("--format", choices=["auto", "edinburgh", "tsv"], default="auto")
    s.add_argument("--out", required=True)
    s.add_argument("--null-share", type=float, default=0.10, help="share of instances with no counterpart")
    s.add_argument("--seed", type=int, default=0)
    s.set_defaults(func=cmd_align_import)

    base = sub.add_parser("baseline", help="word-alignment baselines").add_subparsers(dest="sub", required=True)
    s = base.add_parser("fastalign", help="FastAlign links projected to spans")
    s.add_argument("--instances", required=True)
    s.add_argument("--out", required=True)
    s.add_argument("--links-out", help="also write the links as Edinburgh++-format JSON")
    _fastalign_options(s)
    s.set_defaults(func=cmd_baseline_fastalign)
    disc = base.add_parser("discalign", help="the discriminative word aligner").add_subparsers(dest="subsub", required=True)
    s = disc.add_parser("train")
    s.add_argument("--gold", required=True, help="word-aligned pairs, Edinburgh++ JSON")
    s.add_argument("--encoder", required=True)
    s.add_argument("--out", required=True)
    s.add_argument("--pretrain", help="automatically aligned pairs (Edinburgh++ JSON) to train on first")
    s.add_argument("--pretrain-epochs", type=int, default=2)
    s.add_argument("--possible-as-positive", action="store_true", help="possible links count as positives")
    s.add_argument("--threshold", type=float, help="link probability cut (default: tuned on --dev-share of the pairs)")
    s.add_argument("--dev-share", type=float, default=0.1, help="gold pairs held out to tune the threshold")
    s.add_argument("--epochs", type=int, default=10)
    s.add_argument("--seed", type=int, default=0)
    s.add_argument("--device", default="auto")
    s.set_defaults(func=cmd_discalign_train)
    s = disc.add_parser("predict")
    s.add_argument("--model", required=True)
    s.add_argument("--instances", required=True)
    s.add_argument("--out", required=True)
    s.add_argument("--links-out")
    s.add_argument("--device", default="auto")
    s.set_defaults(func=cmd_discalign_predict)
    s = base.add_parser("compare", help="Tables 1-2: FastAlign, DiscAlign and the span aligner on one split")
    s.add_argument("--instances", required=True)
    s.add_argument("--gold-pairs", required=True, help="the word-aligned pairs the instances come from")
    s.add_argument("--encoder", required=True)
    s.add_argument("--out-dir", required=True)
    s.add_argument("--epochs", type=int, default=10)
    s.add_argument("--seed", type=int, default=0)
    s.add_argument("--k", type=int, default=5)
    s.add_argument("--device", default="auto")
    _fastalign_options(s)
    s.set_defaults(func=cmd_baseline_compare)
    return p


def main(argv: list[str] | None = None) -> int:
    args = build_parser().parse_args(argv)
    logging.basicConfig(level=logging.DEBUG if args.verbose else logging.INFO,
                        format="%(asctime)s %(levelname)s %(name)s: %(message)s")
    try:
        args.func(args)
    except SpanaugError as exc:
        log.error("%s", exc)
        print(f"spanaug: error: {exc}", file=sys.stderr)
        return 2
    return 0


if __name__ == "__main__":
    sys.exit(main())
