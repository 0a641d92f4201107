"""``spanaug import``, ``seeds``, ``shard`` and ``demo-corpus``: the corpus and the seeds."""

from __future__ import annotations

from spanaug.cli.options import command, emit
from spanaug.core.config import ImportSettings, SeedSettings
from spanaug.core.settings import setting, settings


@settings
class ImportOptions:
    out: str = setting(help="the imported sentences (SENTENCES Parquet)")
    stats: str | None = setting(None, "import statistics (JSON; default: standard output)")


@command("import", help="import a corpus into the sentences artifact")
def import_corpus(options: ImportOptions, data: ImportSettings) -> None:
    from spanaug.pipeline.importers import import_corpus

    emit(import_corpus(data, options.out).as_dict(), options.stats)


@settings
class SeedOptions:
    sentences: str = setting(help="the imported sentences")
    out: str = setting(help="the seeds (SENTENCES Parquet)")
    report: str | None = setting(None, "what was chosen (JSON; default: standard output)")


@command("seeds", help="select the seed rows")
def select_seeds(options: SeedOptions, seeds: SeedSettings) -> None:
    from spanaug.core import artifacts
    from spanaug.core.errors import InputError
    from spanaug.pipeline.seeds import select_seeds

    sentences = artifacts.read_table(options.sentences, artifacts.SENTENCES)
    if not sentences.num_rows:
        raise InputError(options.sentences, None, "holds no sentence to seed from")
    chosen, report = select_seeds(sentences, seeds)
    run = artifacts.run_id(chosen.column("sentence_id").to_pylist())
    artifacts.write_table(chosen, options.out, artifacts.SENTENCES, provenance={"run": run, "stage": "seeds"})
    emit(report, options.report)


@settings
class ShardOptions:
    seeds: str = setting(help="the seeds")
    out: list[str] = setting(help="one iteration-0 CHAIN shard per path")


@command("shard", help="split the seeds into iteration-0 shards")
def shard(options: ShardOptions) -> None:
    import logging

    from spanaug.pipeline.iterations import init_shards

    counts = init_shards(options.seeds, options.out)
    logging.getLogger(__name__).info("iteration 0: %d seeds in %d shards %s", sum(counts), len(counts), counts)


@settings
class DemoCorpusOptions:
    spec: str = setting(help="the corpus as YAML (see resources/demo/corpus.yaml)")
    out: str = setting(help="the FrameNet release directory to write")


@command("demo-corpus", help="write a FrameNet release directory from a YAML spec")
def demo_corpus(options: DemoCorpusOptions) -> None:
    from spanaug.demo.framenet_writer import write_release_from_yaml

    write_release_from_yaml(options.spec, options.out)
