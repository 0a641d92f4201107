"""Build a plain virtual environment from a rule environment's dependency list (envs/<name>.yaml).

Where conda channels cannot be reached, this installs what the environment's pip section installs
(its dependencies and this checkout's spanaug, SPANAUG_SOURCE expanded by pip as in `conda env
create`) into a venv made with this Python, whose version must be the file's `python=X.Y`. What the
file takes from conda besides Python and pip comes from pip here. Where it asks for a CPU PyTorch
build (envs/cpu.yaml), the torch of the Python running this script is installed first, so pip does not
fetch a CUDA wheel for `torch>=...` (run it with the project's .venv, whose torch is the CPU wheel);
`--torch REQUIREMENT` names another. Pass more pip options after `--`.

    .venv/bin/python scripts/env_venv.py envs/cpu.yaml /tmp/env-cpu [-- PIP_OPTIONS...]

Then run a rule with it: rules call the `spanaug` beside the Snakemake that runs them
(workflow/rules/common.smk), so add Snakemake to the venv and run that one:

    .venv/bin/python scripts/env_venv.py envs/cpu.yaml /tmp/env-cpu -- 'snakemake>=9,<10'
    /tmp/env-cpu/bin/snakemake --configfile config/demo.yaml --cores 1 results/demo/data/sentences.parquet
"""

from __future__ import annotations

import argparse
import os
import re
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import yaml

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO / "src"))

from spanaug.workflow.envs import SOURCE_VAR, pip_requirements


def cpu_torch(deps: list) -> str | None:
    """``torch==<this Python's version>`` when the env's conda part asks for a CPU PyTorch build."""
    if not any(isinstance(d, str) and d.startswith("pytorch") and "cpu" in d for d in deps):
        return None
    try:
        from importlib.metadata import version

        return f"torch=={version('torch')}"
    except Exception:  # no torch here: pip chooses, as conda would not
        print("warning: no torch in this Python to pin; pip may choose a CUDA wheel", file=sys.stderr)
        return None


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("env_file")
    parser.add_argument("dest")
    parser.add_argument(
        "--torch",
        help="torch requirement installed first (default, for an env asking for a CPU "
        "PyTorch build: this Python's torch version)",
    )
    parser.add_argument("pip_options", nargs="*", help="after --: more pip install options")
    args = parser.parse_args()
    deps = yaml.safe_load(Path(args.env_file).read_text())["dependencies"]
    wanted = next(
        re.fullmatch(r"python=(\d+\.\d+)", d).group(1) for d in deps if isinstance(d, str) and d.startswith("python=")
    )
    have = f"{sys.version_info.major}.{sys.version_info.minor}"
    if have != wanted:
        sys.exit(f"{args.env_file} wants Python {wanted}; this is {have}")
    start = time.time()
    subprocess.run([sys.executable, "-m", "venv", args.dest], check=True)
    pip = [str(Path(args.dest) / "bin" / "python"), "-m", "pip"]
    subprocess.run([*pip, "install", "-q", "--upgrade", "pip"], check=True)
    torch = args.torch or cpu_torch(deps)
    if torch:
        subprocess.run([*pip, "install", "-q", torch, *args.pip_options], check=True)
    with tempfile.NamedTemporaryFile("w", suffix=".requirements.txt", delete=False) as handle:
        handle.write("\n".join(pip_requirements(args.env_file)) + "\n")
    env = dict(os.environ, **{SOURCE_VAR: str(REPO)})
    subprocess.run([*pip, "install", "-q", "-r", handle.name, *args.pip_options], check=True, env=env)
    os.unlink(handle.name)
    print(f"{args.dest}: {args.env_file}'s pip section installed in {time.time() - start:.0f} s")
    return 0


if __name__ == "__main__":
    sys.exit(main())
