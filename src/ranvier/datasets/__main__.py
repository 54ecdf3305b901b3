"""`python -m ranvier.datasets list` and `python -m ranvier.datasets fetch NAME...` (docs/data.md)."""
from __future__ import annotations

import sys
from pathlib import Path

from ..cli.arguments import Parser, UsageError
from . import DATASETS, ROOT_ENV, data_root, folder, present

PROG = "python -m ranvier.datasets"


def make_parser() -> Parser:
    parser = Parser(prog=PROG, description=f"The data sets Ranvier reads but does not ship. They live in "
                                           f"${ROOT_ENV}, or data/ in the current folder (docs/data.md).")
    commands = parser.add_subparsers(dest="command", metavar="{list,fetch}")
    commands.add_parser("list", help="each data set: where it is looked for, whether it is there, its source")
    fetch = commands.add_parser("fetch", help="get data sets from their public originals and derive Ranvier's files")
    fetch.add_argument("names", nargs="+", metavar="NAME", help=f"{', '.join(DATASETS)}, or all")
    fetch.add_argument("--to", type=Path, metavar="DIR",
                       help=f"the data root to fetch into (default: ${ROOT_ENV}, else ./data)")
    fetch.add_argument("--force", action="store_true", help="fetch again a data set that is already there")
    fetch.add_argument("--python", metavar="PYTHON",
                       help="the Python to make the multi-area derivation's environment with (3.9 to 3.12; "
                            "default: this one, else python3.12 ... python3.9 on PATH)")
    return parser


def list_datasets() -> None:
    print(f"data root: {data_root()} (${ROOT_ENV}, else ./data)")
    for name, d in DATASETS.items():
        state = "here" if present(name) else f"missing: {d.fetch_command}"
        print(f"{name}: {folder(name)} ({state})\n    {d.what}; from https://github.com/{d.repository} at "
              f"{d.commit[:12]}, {d.license}")


def main(argv=None) -> int:
    from .fetch import FetchError, fetch

    try:
        args = make_parser().parse_args(argv)
        if args.command is None:
            raise UsageError(f"a command is required: 'list' or 'fetch' (see '{PROG} --help')")
        if args.command == "list":
            list_datasets()
            return 0
        names = list(DATASETS) if args.names == ["all"] else args.names
        unknown = [n for n in names if n not in DATASETS]
        if unknown:
            raise UsageError(f"no data set {unknown[0]!r}; the data sets are {', '.join(DATASETS)} (or all)")
    except UsageError as e:
        print(f"ranvier: error: {e}", file=sys.stderr)
        return 2
    try:
        for name in dict.fromkeys(names):
            fetch(name, root=args.to, force=args.force, python=args.python)
    except FetchError as e:
        print(f"ranvier: error: {name}: {e}", file=sys.stderr)
        return 1
    except KeyboardInterrupt:
        print("ranvier: interrupted", file=sys.stderr)
        return 130
    return 0


if __name__ == "__main__":
    sys.exit(main())
