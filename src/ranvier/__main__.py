"""`python -m ranvier ...` is the `ranvier` command."""
import sys

from .cli import main

sys.exit(main())
