"""Analyses of runs and the models that explain them: activity, up/down states, deadlines, imbalance, theory, reports."""


def __getattr__(name: str):
    """A submodule on first use (`rv.io.config` as after `import ranvier.io.config`): importing
    the package loads none of them."""
    import importlib
    try:
        return importlib.import_module(f"{__name__}.{name}")
    except ModuleNotFoundError as e:
        if e.name != f"{__name__}.{name}":
            raise
        raise AttributeError(f"module {__name__!r} has no attribute {name!r}") from None
