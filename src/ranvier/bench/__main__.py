"""`python -m ranvier.bench worker SPEC.json`: one benchmark job (see worker.py)."""
import sys

from .worker import main

sys.exit(main(sys.argv[1:]))
