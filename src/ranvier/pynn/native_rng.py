"""pyNN.ranvier.NativeRNG: "the simulator's own random numbers", as PyNN's backends offer it.

On a connector that Ranvier can draw itself (projections.native_rule: fixed probability, fixed
numbers, between whole populations), a NativeRNG lets Ranvier draw the connections from its
keyed generator and the simulation's seed: the same network for any ranks and threads, built in
parallel. Everywhere else (a RandomDistribution of weights, delays or parameters, a connector
PyNN draws), its numbers come from NumPy's generator seeded with its seed, as NumpyRNG's do.
"""
from __future__ import annotations

from pyNN import random


class NativeRNG(random.NativeRNG):
    __doc__ = __doc__

    def __init__(self, seed=None, parallel_safe=True):
        super().__init__(seed)
        self.parallel_safe = parallel_safe
        self._numpy = random.NumpyRNG(seed=seed, parallel_safe=parallel_safe)

    def __getattr__(self, name):
        if name.startswith("_"):
            raise AttributeError(name)
        return getattr(self._numpy, name)

    def next(self, n=None, distribution=None, parameters=None, mask=None):
        return self._numpy.next(n, distribution, parameters, mask)
