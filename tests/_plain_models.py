"""Model files read as tests edit them: every packed array a JSON list."""

from __future__ import annotations

import json
from pathlib import Path


def plain_document(path) -> dict:
    """The model file at ``path``, parsed, its packed arrays unpacked into lists."""
    from gpu_tree.model.file_format.writing import unpacked_document

    return unpacked_document(json.loads(Path(path).read_text()), str(path))
