"""Errors a user can act on."""


class ConfigError(ValueError):
    """Bad input: the message names the field and how to fix it.

    Raised before anything is built or written. The command line prints the message
    as one line and exits with status 2.
    """


class Terminated(KeyboardInterrupt):
    """SIGTERM, as batch systems send it at a job's wall-time limit (SLURM, PBS) and `kill` does by
    default: the `ranvier` command stops as after Ctrl-C (nothing half-written kept, complete
    checkpoints kept), with status 143 (128 + 15, as a shell reports SIGTERM)."""
