"""A neuron model is one file on each side: its Python module ranvier/core/neurons/<name>.py (parameters,
units, recordables, input unit, conversions, the engine's spec) and its C++ file under cpp/neurons/,
which reads the parameters by name. Nothing else names a model or holds one of its facts."""
from __future__ import annotations

import ast
import importlib
import re
from pathlib import Path

from ranvier import _engine
from ranvier.core.neurons import NEURON_MODELS as REGISTRY, NeuronModel

# The built-in models: NESTML models that other test files load in the same session join the
# registry (ranvier.nestml) and are no files of the package.
NEURON_MODELS = {n: m for n, m in REGISTRY.items() if not getattr(m, "nestml_file", None)}

ROOT = Path(__file__).resolve().parents[1]
PACKAGE = ROOT / "src" / "ranvier"

# What every population has, and what the engine's core needs of a population: nothing of one model.
POPULATION_FIELDS = {"name", "first", "size", "model", "parameters", "per_neuron", "initial", "sequences",
                     "integer_sequences", "area", "tau_minus_ms", "tau_minus_triplet_ms",
                     "injected_current"}

# (file under src/ranvier, model name) -> why that file may name the model as a string.
NAMED_ELSEWHERE = {
    ("core/network.py", "lifca"): "the default model of a Population",
    ("models/__init__.py", "artificial"): "the workload builders choose their models, as a user's script does",
    ("models/__init__.py", "ignore_and_fire"): "the workload builders choose their models",
    ("models/__init__.py", "psc_exp"): "the workload builders choose their models",
    ("models/__init__.py", "poisson_source"): "the workload builders choose their models",
    ("models/multi_area.py", "psc_exp"): "the multi-area model's builder chooses its model",
}


def test_every_model_is_the_one_model_of_its_own_module():
    assert NEURON_MODELS
    for name, model in NEURON_MODELS.items():
        assert model.__module__ == f"ranvier.core.neurons.{name}", (name, model.__module__)
        module = importlib.import_module(model.__module__)
        own = [m for m in vars(module).values()
               if isinstance(m, type) and issubclass(m, NeuronModel) and m.__module__ == module.__name__]
        assert own == [model], (name, own)
    files = {p.stem for p in (PACKAGE / "core" / "neurons").glob("*.py")} - {"__init__", "base"}
    assert files == set(NEURON_MODELS), "every module of ranvier/core/neurons but base is one model"


def test_every_model_has_its_engine_file_of_the_same_name():
    """cpp/neurons/<name>.cpp, which the build lists in the engine's registry (CMakeLists.txt)."""
    files = {p.stem for p in (ROOT / "cpp" / "neurons").glob("*.cpp")} - {"registry"}
    assert files == set(NEURON_MODELS)
    for name in NEURON_MODELS:
        text = (ROOT / "cpp" / "neurons" / f"{name}.cpp").read_text()
        assert f"namespace ranvier::{name}" in text and f'NeuronModel model{{"{name}"' in text, name


def test_no_module_outside_the_models_names_a_model():
    found = set()
    for path in sorted(PACKAGE.rglob("*.py")):
        rel = path.relative_to(PACKAGE).as_posix()
        if rel.startswith("core/neurons/"):
            continue
        for node in ast.walk(ast.parse(path.read_text(), filename=str(path))):
            if isinstance(node, ast.Constant) and isinstance(node.value, str) and node.value in NEURON_MODELS:
                found.add((rel, node.value))
    unexplained = sorted(found - set(NAMED_ELSEWHERE))
    assert not unexplained, (f"model names outside ranvier/core/neurons: {unexplained}; ask the model "
                             f"(NEURON_MODELS[name].<fact>, or the class's .name) instead")
    stale = sorted(set(NAMED_ELSEWHERE) - found)
    assert not stale, f"NAMED_ELSEWHERE lists names no longer there: {stale}"


def test_population_spec_has_no_field_of_one_model():
    bound = {a for a in dir(_engine.PopulationSpec()) if not a.startswith("_")}
    assert bound == POPULATION_FIELDS, (sorted(bound - POPULATION_FIELDS), sorted(POPULATION_FIELDS - bound))
    text = (ROOT / "cpp" / "base" / "spec.hpp").read_text()
    body = re.search(r"struct PopulationSpec \{(.*?)\n\};", text, re.S).group(1)
    code = "\n".join(line.split("//")[0] for line in body.splitlines())
    declared = set()
    for statement in code.split(";"):
        statement = re.sub(r"<[^;]*>", "", " ".join(statement.split()))    # template arguments out
        statement = re.sub(r"=\s*[^,]+", "", statement)                    # default values out
        if statement:
            declared.update(part.split()[-1] for part in statement.split(","))
    assert declared == POPULATION_FIELDS, (sorted(declared - POPULATION_FIELDS), sorted(POPULATION_FIELDS - declared))


def test_the_engine_reads_parameters_by_the_models_names():
    """Every scalar parameter reaches the engine by its Python name: to_engine fills the spec's
    parameters from the population's (psc_exp resolves its tau_syn_ms into the two it stands for)."""
    from test_neurons import VALID
    import ranvier as rv
    for name, model in NEURON_MODELS.items():
        net = rv.Network()
        pop = net.add_population(rv.Population("A", 10, dict(VALID[name]), model=name))
        net.validate(0.1)
        s = model.to_engine(pop, 0.1)
        scalars = {k for k, v in pop.params.items() if isinstance(v, (int, float))}
        assert set(s.parameters) <= set(model.parameters), name
        assert scalars - set(s.parameters) <= {"tau_syn_ms"}, (name, sorted(scalars - set(s.parameters)))
