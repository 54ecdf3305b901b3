"""The data sets the tests read (ranvier.datasets, docs/data.md): found through $RANVIER_DATA,
else the repository's data/ folder whatever the current folder is (set here for this process and
every child it starts). A test that needs a data set is skipped without it, with the reason and
the command that gets it; CI points $RANVIER_DATA at its copy (.ci/run)."""
from __future__ import annotations

import os
import re
from pathlib import Path

from ranvier import datasets

ROOT = Path(__file__).resolve().parents[1]
os.environ.setdefault(datasets.ROOT_ENV, str(ROOT / datasets.DEFAULT_ROOT))

# What in a documented command says it reads a data set: the model's name as a word (a model or a
# workload), a script that reads it, or a path into its folder below data/.
USES = {
    "multi-area-model": re.compile(r"(^|\s)multi-area(\s|$)|multi_area_nest\.py|(^|[\s=])data/multi-area-model\b"),
    "sonata-300": re.compile(r"sonata_300\.py|(^|[\s=])data/sonata/"),
}
assert set(USES) == set(datasets.DATASETS)


def folder(name: str) -> Path:
    return datasets.folder(name)


def present(name: str) -> bool:
    return datasets.present(name)


def needed_by(command: str) -> list[str]:
    """The data sets a command reads."""
    return [name for name, pattern in USES.items() if pattern.search(command)]


def missing_for(command: str) -> str | None:
    """Why `command` cannot run here (the first data set it reads that is not here), or None."""
    absent = [name for name in needed_by(command) if not present(name)]
    return datasets.missing(absent[0]) if absent else None


def link_data_root(into: Path) -> None:
    """A `data` link in `into` to the data root, so that a documented path data/... resolves there."""
    link = into / datasets.DEFAULT_ROOT
    if not os.path.lexists(link):
        link.symlink_to(datasets.data_root().resolve(), target_is_directory=True)
