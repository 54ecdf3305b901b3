"""Makes `import pyNN.ranvier` import ranvier.pynn (Ranvier's PyNN backend), so scripts written
for PyNN run with `import pyNN.ranvier as sim`. Loaded at interpreter start by
ranvier-pynn.pth (installed beside it); it imports nothing until pyNN.ranvier is asked for."""
import importlib
import importlib.abc
import importlib.machinery
import sys


class _PyNNRanvier(importlib.abc.MetaPathFinder, importlib.abc.Loader):
    def find_spec(self, fullname, path=None, target=None):
        if fullname != "pyNN.ranvier":
            return None
        return importlib.machinery.ModuleSpec(fullname, self)

    def create_module(self, spec):
        return importlib.import_module("ranvier.pynn")       # the one module, under both names

    def exec_module(self, module):
        pass


if not any(isinstance(f, _PyNNRanvier) for f in sys.meta_path):
    sys.meta_path.append(_PyNNRanvier())
