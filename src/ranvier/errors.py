"""Errors a user can act on."""


class ConfigError(ValueError):
    """Bad input: the message names the field and how to fix it.

    Raised before anything is built or written. The command line prints the message
    as one line and exits with status 2.
    """
