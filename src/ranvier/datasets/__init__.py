"""The data sets that some models, examples and tests read and that Ranvier does not ship: where
they are looked for, and what each is (docs/data.md).

All of them live in one folder, the data root: $RANVIER_DATA, or `data/` in the current folder
(the repository's root when you follow the docs; git ignores it). Each data set is a folder
below it, named as in `DATASETS`. `python -m ranvier.datasets fetch NAME` gets a data set from
its public original and derives Ranvier's files from it (ranvier.datasets.fetch).
"""
from __future__ import annotations

import os
from dataclasses import dataclass
from pathlib import Path

ROOT_ENV = "RANVIER_DATA"
DEFAULT_ROOT = "data"
FETCH = "python -m ranvier.datasets fetch"


@dataclass(frozen=True)
class DataSet:
    name: str
    folder: str             # below the data root
    marker: str             # a file of the folder, there once the data set is complete
    what: str               # a few words for messages
    repository: str         # the public original on GitHub, owner/name
    commit: str             # pinned: the data set is derived from this commit
    license: str
    env: str | None = None  # a variable naming this data set's folder itself (kept from before RANVIER_DATA)

    @property
    def archive_url(self) -> str:
        return f"https://codeload.github.com/{self.repository}/tar.gz/{self.commit}"

    @property
    def fetch_command(self) -> str:
        return f"{FETCH} {self.name}"


DATASETS: dict[str, DataSet] = {d.name: d for d in (
    DataSet("multi-area-model", "multi-area-model", "structure.npz",
            "the multi-area model's network structure",
            "INM-6/multi-area-model", "355d94042f4fe613e5602918082f5e667695932e",
            "CC BY-NC-SA 4.0", env="RANVIER_MULTI_AREA_DATA"),
    DataSet("sonata-300", "sonata", "300_pointneurons/simulation_config.json",
            "the SONATA example of 300 point neurons with NEST's spikes",
            "AllenInstitute/sonata", "0ee3ad58df6caec3ac27d24c6777de9af1fd1f3a",
            "BSD-3-Clause (Allen Institute)"),
)}


def data_root() -> Path:
    """The folder that holds the data sets: $RANVIER_DATA, else data/ in the current folder."""
    return Path(os.environ.get(ROOT_ENV) or DEFAULT_ROOT).expanduser()


def dataset(name: str) -> DataSet:
    try:
        return DATASETS[name]
    except KeyError:
        from ..errors import ConfigError
        raise ConfigError(f"no data set {name!r}; the data sets are {', '.join(DATASETS)}") from None


def folder(name: str) -> Path:
    """Where the data set `name` is looked for: its own variable where one is set, else its
    folder below the data root (whether it is there or not)."""
    d = dataset(name)
    own = os.environ.get(d.env) if d.env else None
    return Path(own).expanduser() if own else data_root() / d.folder


def present(name: str) -> bool:
    return (folder(name) / dataset(name).marker).is_file()


def missing(name: str) -> str:
    """Why a data set cannot be used, and how to get it: one sentence for errors and skips."""
    d = dataset(name)
    return (f"the {name} data set ({d.what}) is not in {folder(name)}: get it with `{d.fetch_command}` "
            f"(docs/data.md), or set {ROOT_ENV} to the folder that holds {d.folder}/")
