"""Report figures: matplotlib on the Agg backend (no display on cluster nodes), saved atomically."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from spanaug.core import files


def subplots(*args: Any, **kwargs: Any) -> tuple[Any, Any]:
    """``plt.subplots`` with the non-interactive backend selected first."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    return plt.subplots(*args, **kwargs)


def png_bytes(fig: Any) -> bytes:
    """Lay out, render as PNG in memory (for a page that embeds it), close."""
    import io

    import matplotlib.pyplot as plt

    fig.tight_layout()
    buffer = io.BytesIO()
    fig.savefig(buffer, format="png", dpi=120)
    plt.close(fig)
    return buffer.getvalue()


def save(fig: Any, path: Path | str) -> None:
    """Lay out, write atomically in the format the suffix names (PNG by default), close."""
    import matplotlib.pyplot as plt

    fig.tight_layout()
    suffix = Path(path).suffix or ".png"
    with files.atomic_path(path, suffix) as tmp:
        fig.savefig(tmp, format=suffix.lstrip("."), dpi=120)
    plt.close(fig)
