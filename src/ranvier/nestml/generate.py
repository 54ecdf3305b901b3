"""From a .nestml file to one C++ neuron model file for Ranvier's model interface
(cpp/neurons/neuron_model.hpp, loaded through cpp/neurons/model_abi.hpp).

NESTML's own front end parses and checks the model; its transformers and ODE-toolbox analyse
the equations (kernels and convolutions become state variables, linear systems get exact
propagators, declared as internals); NESTML's C++ expression printer prints expressions, with
this module's variable and function printers. The statements, the step's order and the model's
layout in Ranvier's columns are this module's.

The step, per neuron, in the order of NESTML's own targets: the convolutions' state variables
are propagated (new values kept aside), the update block runs (integrate_odes() propagates the
state variables it names, or all that are not convolutions), the convolutions take their new
values, incoming spikes jump them (ODE-toolbox's spike updates), the onReceive blocks run for
the ports that received input in this step, and the onCondition blocks run in order.
"""
from __future__ import annotations

import hashlib
import re
from dataclasses import dataclass, field
from pathlib import Path

from ..errors import ConfigError

NESTML_VERSION = "9.0.0"


class Unsupported(ConfigError):
    """A construct of the model that Ranvier's NESTML target does not support (yet)."""


@dataclass
class StateVariable:
    name: str             # NESTML's (after the transformation: kernels' variables too)
    unit: str
    column: str           # "V", "c" or "extra[i]"
    initial: str = ""     # its initial value: a number (NEST's units) or a parameter's name; "" else


@dataclass
class GeneratedModel:
    """What the Python model class needs besides the C++ source."""
    nestml_name: str
    engine_name: str
    source: str
    path: str
    parameters: list = field(default_factory=list)       # (name, unit, default or None, description)
    state: list = field(default_factory=list)            # StateVariable
    split_input: bool = False
    takes_current: bool = False
    spike_ports: list = field(default_factory=list)      # (name, kind): kind "excitatory", "inhibitory", "signed"
    receptors: int = 0                                   # > 0: one receptor per spike port, in declaration order
    input_unit: str | None = None
    digest: str = ""


def _line(node) -> int:
    try:
        return node.get_source_position().start_line
    except AttributeError:
        return 0


def _fail(path: str, node, what: str) -> None:
    raise Unsupported(f"{path}:{_line(node)}: {what} is not supported by Ranvier's NESTML target yet "
                      f"(docs/nestml.md lists what is)")


def _ident(name: str) -> str:
    return re.sub(r"[^A-Za-z0-9_]", "_", name)


def _unit_of(symbol) -> str:
    try:
        t = symbol.get_type_symbol()
        return t.print_nestml_type() if hasattr(t, "unit") else ""
    except Exception:
        return ""


def _load(path: str):
    """(model before transformation, model after, metadata, namespace) from NESTML's pipeline."""
    import tempfile

    from pynestml.cocos.co_cos_manager import CoCosManager
    from pynestml.codegeneration.python_standalone_code_generator import PythonStandaloneCodeGenerator
    from pynestml.frontend.pynestml_frontend import (configure_front_end, get_parsed_models, transform_models,
                                                     transformers_from_target_name)
    from pynestml.utils.logger import Logger, LoggingLevel

    target = tempfile.mkdtemp(prefix="ranvier-nestml-")
    configure_front_end(path, "NONE", target_path=target, logging_level="ERROR")
    models = get_parsed_models()
    if not models:
        raise ConfigError(f"{path}: NESTML could not parse it (run `nestml --input_path {path}` for its messages)")
    for m in models:
        if not Logger.has_errors(m):
            CoCosManager.check_cocos(m)
        if Logger.has_errors(m):
            msgs = [msg for msg in Logger.get_messages(m, LoggingLevel.ERROR)] if hasattr(Logger, "get_messages") else []
            first = ""
            for entry in msgs:
                first = str(entry[-1] if isinstance(entry, (tuple, list)) else entry)
                break
            raise ConfigError(f"{path}: NESTML rejects model '{m.get_name()}'" + (f": {first}" if first else "") +
                              f"; fix the model (`nestml --input_path {path}` prints every message)")
    neurons = [m for m in models if not m.get_name().endswith("_synapse")]
    if len(neurons) != 1:
        raise ConfigError(f"{path}: holds {len(neurons)} neuron models; give a file with one")
    model = neurons[0]
    _check_before(path, model)
    ode_lines = {}
    for block in model.get_equations_blocks():
        for eq in block.get_ode_equations():
            ode_lines[eq.get_lhs().get_name()] = _line(eq)
    transformers, _ = transformers_from_target_name("PYTHON_STANDALONE")
    models_t, metadata = transform_models(transformers, [model])
    model = models_t[0]
    generator = PythonStandaloneCodeGenerator()
    generator.analyse_transform_neurons([model], metadata)
    namespace = generator._get_neuron_model_namespace(model, metadata)
    return model, metadata[model.get_name()], namespace, ode_lines


def _check_before(path: str, model) -> None:
    """Refuses the constructs outside the supported scope, on the model as written."""
    for sym in model.get_vector_symbols() if hasattr(model, "get_vector_symbols") else []:
        _fail(path, sym.get_referenced_object() if hasattr(sym, "get_referenced_object") else model,
              f"the vector variable '{sym.get_symbol_name()}'")
    for block in model.get_input_blocks():
        spikes = [p for p in block.get_input_ports() if p.is_spike()]
        currents = [p for p in block.get_input_ports() if p.is_continuous()]
        for p in block.get_input_ports():
            if p.has_size_parameter():
                _fail(path, p, f"the vector input port '{p.get_name()}'")
        if len(currents) > 1:
            _fail(path, currents[1], f"a second continuous input port ('{currents[1].get_name()}')")
        exc = [p for p in spikes if _port_kind(p) != "inhibitory"]
        inh = [p for p in spikes if _port_kind(p) == "inhibitory"]
        if _receptor_ports(spikes):
            if len(spikes) > MAX_RECEPTORS:
                _fail(path, spikes[MAX_RECEPTORS], f"more than {MAX_RECEPTORS} spike ports ('{spikes[-1].get_name()}')")
            marked = [p for p in spikes if _port_kind(p) != "signed"]
            if marked:
                _fail(path, marked[0], f"an excitatory or inhibitory qualifier on one of several receptor ports "
                                       f"('{marked[0].get_name()}')")
        elif inh and not exc:
            _fail(path, inh[0], f"an inhibitory spike port ('{inh[0].get_name()}') without an excitatory one")


# The engine's receptors per neuron (cpp/neurons/neuron_model.hpp: kMaxReceptors).
MAX_RECEPTORS = 8


def _receptor_ports(spikes) -> bool:
    """Whether the spike ports are receptors (one input column each, each projection naming one):
    more than two ports, or two that an excitatory / inhibitory pair does not describe."""
    kinds = [_port_kind(p) for p in spikes]
    return len(kinds) - kinds.count("inhibitory") > 1 or kinds.count("inhibitory") > 1


def _port_kind(port) -> str:
    """"excitatory" or "inhibitory" for a spike port with that qualifier, "signed" for one
    without (NESTML's ports without qualifiers take every weight with its sign)."""
    qualifiers = port.get_input_qualifiers() or []
    if any(q.is_inhibitory for q in qualifiers):
        return "inhibitory"
    if any(q.is_excitatory for q in qualifiers):
        return "excitatory"
    return "signed"


def _printer(path: str, model, ctx: "_Context"):
    """NESTML's C++ expression printer with Ranvier's names."""
    from pynestml.codegeneration.nest_unit_converter import NESTUnitConverter
    from pynestml.codegeneration.printers.constant_printer import ConstantPrinter
    from pynestml.codegeneration.printers.cpp_expression_printer import CppExpressionPrinter
    from pynestml.codegeneration.printers.cpp_function_call_printer import CppFunctionCallPrinter
    from pynestml.codegeneration.printers.cpp_simple_expression_printer import CppSimpleExpressionPrinter
    from pynestml.codegeneration.printers.variable_printer import VariablePrinter
    from pynestml.symbols.predefined_functions import PredefinedFunctions
    from pynestml.symbols.predefined_units import PredefinedUnits
    from pynestml.symbols.predefined_variables import PredefinedVariables
    from pynestml.symbols.symbol import SymbolKind

    class Constants(ConstantPrinter):
        def print_constant(self, node):
            if isinstance(node, bool):
                return "true" if node else "false"
            if isinstance(node, (int, float)):
                return repr(float(node))          # a double, every digit (no integer division in C++)
            return super().print_constant(node)

    class Variables(VariablePrinter):
        def print_variable(self, variable) -> str:
            name = variable.get_complete_name()
            if variable.has_vector_parameter() or variable.is_delay_variable():
                _fail(path, variable, f"the vector or delay variable '{name}'")
            if name == PredefinedVariables.E_CONSTANT:
                return "M_E"
            if name == PredefinedVariables.PI_CONSTANT:
                return "M_PI"
            if name == PredefinedVariables.TIME_CONSTANT:
                if ctx.time_variable:
                    return ctx.time_variable
                _fail(path, variable, "the simulation time 't' in an expression")
            symbol = variable.get_scope().resolve_to_symbol(name, SymbolKind.VARIABLE) if variable.get_scope() else None
            if ctx.names is not None and symbol is not None:
                named = ctx.names(name, symbol, variable)
                if named is not None:
                    return named
            if symbol is None:
                if PredefinedUnits.is_unit(name):
                    return repr(float(NESTUnitConverter.get_factor(PredefinedUnits.get_unit(name).get_unit())))
                _fail(path, variable, f"the name '{name}' (not a variable of the model)")
            if symbol.is_spike_input_port():
                factor = NESTUnitConverter.get_factor(symbol.get_type_symbol().unit.unit) \
                    if hasattr(symbol.get_type_symbol(), "unit") else 1
                return f"({float(factor)!r} * in_{_ident(name)})"
            if symbol.is_continuous_input_port():
                factor = NESTUnitConverter.get_factor(symbol.get_type_symbol().unit.unit) \
                    if hasattr(symbol.get_type_symbol(), "unit") else 1
                return f"({float(factor)!r} * in_current)"
            if symbol.is_inline_expression:
                ctx.inlines_used.add(name)
                return f"inline_{_ident(name)}()"
            if symbol.is_state():
                return f"v_{_ident(name)}"
            if symbol.is_parameters() or symbol.is_internals():
                return f"P.p_{_ident(name)}"
            if symbol.is_local():
                return f"l_{_ident(name)}"
            _fail(path, variable, f"the variable '{name}' of this kind")

    class Functions(CppFunctionCallPrinter):
        def print_function_call(self, call) -> str:
            n = call.get_name()
            if n in (PredefinedFunctions.TIME_RESOLUTION, PredefinedFunctions.TIME_TIMESTEP):
                return "h"
            if n == PredefinedFunctions.TIME_STEPS:
                return f"std::nearbyint(({self._expression_printer.print(call.get_args()[0])}) / h)"
            if n == PredefinedFunctions.EXPM1:
                return f"std::expm1({self._expression_printer.print(call.get_args()[0])})"
            if n == PredefinedFunctions.POW:
                a, b = call.get_args()
                return f"std::pow({self._expression_printer.print(a)}, {self._expression_printer.print(b)})"
            if n in ("Heaviside",):
                return super().print_function_call(call)
            if n in (PredefinedFunctions.RANDOM_NORMAL, PredefinedFunctions.RANDOM_UNIFORM):
                if not ctx.in_step:
                    _fail(path, call, f"'{n}()' outside {ctx.random_scope}")
                ctx.uses_random = True
                ctx.random_calls += 1
                a, b = (self._expression_printer.print(x) for x in call.get_args())
                if n == PredefinedFunctions.RANDOM_NORMAL:         # mean, standard deviation
                    return f"(({a}) + ({b}) * inverse_normal(rng.uniform()))"
                return f"(({a}) + (({b}) - ({a})) * rng.uniform())"   # low, high
            if n in ctx.functions:           # the model's own: fn_<name>(P, h, ...) (_function_code)
                args = "".join(", " + self._expression_printer.print(a) for a in call.get_args())
                return f"fn_{_ident(n)}(P, h{args})"
            known = {PredefinedFunctions.EXP, PredefinedFunctions.LN, PredefinedFunctions.LOG10, PredefinedFunctions.COS,
                     PredefinedFunctions.SIN, PredefinedFunctions.TAN, PredefinedFunctions.COSH,
                     PredefinedFunctions.SINH, PredefinedFunctions.TANH, PredefinedFunctions.ERF,
                     PredefinedFunctions.ERFC, PredefinedFunctions.CLIP, PredefinedFunctions.MAX,
                     PredefinedFunctions.MIN, PredefinedFunctions.ABS, PredefinedFunctions.CEIL,
                     PredefinedFunctions.FLOOR, PredefinedFunctions.ROUND}
            if n not in known:
                _fail(path, call, f"the function call '{n}()'")
            return super().print_function_call(call)

    variables = Variables(None)
    functions = Functions(None)
    simple = CppSimpleExpressionPrinter(variable_printer=variables, constant_printer=Constants(),
                                        function_call_printer=functions)
    printer = CppExpressionPrinter(simple_expression_printer=simple)
    variables._expression_printer = printer
    functions._expression_printer = printer
    return printer


class _Context:
    def __init__(self, functions=()):
        self.inlines_used: set[str] = set()
        self.functions = set(functions)      # the model's function blocks, by name
        self.in_step = False                 # printing the step's statements (random numbers allowed)
        self.uses_random = False             # the step draws random numbers (a stream per neuron and step)
        self.random_calls = 0                # calls printed that draw one
        self.random_scope = "the update, onReceive and onCondition blocks"
        self.time_variable = None            # the C++ name of NESTML's 't', where a target defines it
        self.names = None                    # (name, symbol, variable) -> C++ name or None: a target's own


def generate(path: str | Path) -> GeneratedModel:
    """Parses, checks and analyses the model of a .nestml file; returns Ranvier's C++ model file
    for it. Raises ConfigError (NESTML rejects the model) or Unsupported (a construct outside
    what Ranvier's target supports: the message names it and its line)."""
    path = str(Path(path).resolve())
    if not Path(path).is_file():
        raise ConfigError(f"NESTML model file '{path}' does not exist")
    model, meta, ns, ode_lines = _load(path)
    from pynestml.symbols.symbol import SymbolKind

    ctx = _Context(f.get_name() for f in model.get_functions())
    P = _printer(path, model, ctx).print
    scope = model.get_scope()

    def unit(n):
        sym = scope.resolve_to_symbol(n, SymbolKind.VARIABLE)
        return _unit_of(sym) if sym else ""

    # Sorted: NESTML's and ODE-toolbox's orders can change from run to run; the generated source
    # (and its digest, the model's name in the engine) must not.
    analytic = sorted(ns.get("analytic_state_variables", []) or []) if ns.get("uses_analytic_solver") else []
    update_exprs = ns.get("update_expressions", {}) if analytic else {}
    convolutions = [v for v in analytic if "__X__" in v]
    # the variables ODE-toolbox left to a numeric solver: with NESTML's NEST target, all of the
    # model's ODEs, integrated together by RKF45 (the analytic ones then take their exact values)
    numeric = sorted(ns.get("numeric_state_variables", []) or []) if ns.get("uses_numeric_solver") else []
    solver = _NumericSolver(numeric, ns.get("numeric_update_expressions", {}) if numeric else {})
    state_syms, state, extra_columns = _state_layout(path, model, unit, hidden=solver.hidden_state())
    spike_ports, current_port, split = _ports(model)
    receptors = len(spike_ports) if any(k.startswith("receptor") for _, k in spike_ports) else 0
    parameters, param_code = _parameters(path, model, scope, P)
    parameters += solver.parameters()
    param_code += solver.parameter_code()
    internals_code, internal_fields = _internals(path, model, P)
    init_code = _initial_values(path, state_syms, P) + solver.initial_code()
    computed = _state_read_at_start(path, model, param_code + internals_code, init_code)
    param_code, internals_code = computed, []
    _note_initial(state, state_syms, P)
    ctx.in_step = True
    step = _step_statements(path, model, P, analytic, convolutions, update_exprs, ns.get("spike_updates", {}) or {},
                            spike_ports, solver)
    inline_code = _inline_code(path, model, ctx, P)      # after the statements: they name the inlines used
    ctx.in_step = False
    function_code = _function_code(path, model, P)

    nestml_name = model.get_name()
    names_list = ", ".join(f'"{n}"' for n, *_ in parameters)
    fields = "\n".join(f"  double {f} = 0.0;" for f in [f"p_{_ident(n)}" for n, *_ in parameters] + internal_fields)
    src_body = _TEMPLATE.format(
        path=path, nestml=nestml_name, nestml_version=NESTML_VERSION, fields=fields,
        names=names_list + (", " if names_list else "") + "nullptr",
        params="\n".join(param_code), internals="\n".join(internals_code),
        init="\n".join(init_code),
        init_v=(f"    if (initial_v != spec.per_neuron.end()) v_{_ident(state[0].name)} = "
                f"neuron_value(initial_v->second, key, s.gid[k], spec.first);" if state[0].column == "V" else ""),
        init_store="\n".join(f"    s.{s.column}[k] = v_{_ident(s.name)};" for s in state),
        load="\n".join(f"      double v_{_ident(s.name)} = s.{s.column}[k];" for s in state),
        inputs="\n".join(_input_lines(spike_ports, current_port)), inlines="\n".join(inline_code),
        functions="\n".join(function_code),
        conv_begin="\n".join(step["conv_begin"]), update="\n".join(step["update"]),
        conv_end="\n".join(step["conv_end"]), spikes="\n".join(step["spikes"]),
        receive="\n".join(step["receive"]), conditions="\n".join(step["conditions"]),
        store="\n".join(f"      s.{s.column}[k] = v_{_ident(s.name)};" for s in state),
        random=("      // the neuron's own random numbers in this step: keyed by (seed, gid, step)\n"
                "      Stream rng(key_, s.gid[k], Purpose::firing, uint32_t(uint64_t(in.step) >> 32), "
                "uint32_t(in.step));" if ctx.uses_random else ""),
        split="true" if split else "false", extra=extra_columns,
        receptors=receptors, layout="layout" if receptors else "nullptr",
        current="true" if current_port else "false", inh_col=0 if extra_columns > 0 else -1,
        engine_name="@ENGINE_NAME@")
    digest = hashlib.sha256(src_body.encode()).hexdigest()[:16]
    engine_name = f"nestml_{nestml_name}_{digest}"
    return GeneratedModel(nestml_name=nestml_name, engine_name=engine_name,
                          source=src_body.replace("@ENGINE_NAME@", engine_name), path=path,
                          parameters=parameters, state=state, split_input=split, takes_current=bool(current_port),
                          spike_ports=spike_ports, receptors=receptors, input_unit=_input_unit(model, spike_ports, unit, parameters),
                          digest=digest)


def _state_layout(path, model, unit, hidden=()):
    """The state variables (name, declaration) in declaration order, and their columns: V is V_m
    where the model has it, then the others, the kernels' sorted, timers (ms) last, then the
    generator's own (`hidden`: the numeric solver's step size)."""
    state_syms = []
    for block in model.get_state_blocks():
        for decl in block.get_declarations():
            for var in decl.get_variables():
                state_syms.append((var.get_complete_name(), decl))
    names = [n for n, _ in state_syms]
    if not names:
        raise Unsupported(f"{path}:{_line(model)}: a model without state variables is not supported by Ranvier's "
                          f"NESTML target")
    first = "V_m" if "V_m" in names else names[0]
    rest = [n for n in names if n != first and "__X__" not in n] + sorted(n for n in names if "__X__" in n)
    rest = [n for n in rest if unit(n) != "ms"] + [n for n in rest if unit(n) == "ms"]
    order = [first] + rest + list(hidden)
    max_extra = 16      # kMaxExtraColumns (cpp/neurons/neuron_model.hpp); the engine refuses more at load
    if len(order) > 2 + max_extra:
        decl = dict(state_syms).get(order[2 + max_extra], model)
        _fail(path, decl, f"more than {2 + max_extra} state variables (after NESTML's transformation: "
                          f"{', '.join(order)})")
    columns = ["V", "c"] + [f"extra[{i}]" for i in range(max_extra)]
    state = [StateVariable(n, "ms" if n in hidden else unit(n), columns[i]) for i, n in enumerate(order)]
    return state_syms, state, max(0, len(order) - 2)


def _ports(model):
    """The spike ports (name, kind), the continuous-current port's name (or None), and whether
    the input is split into excitatory and inhibitory rows."""
    spike_ports, current_port, ports = [], None, []
    for block in model.get_input_blocks():
        for p in block.get_input_ports():
            if p.is_spike():
                spike_ports.append((p.get_name(), _port_kind(p)))
                ports.append(p)
            else:
                current_port = p.get_name()
    if _receptor_ports(ports):            # receptor r's input: StepInput::receptor(r), the weight's sign kept
        return [(n, f"receptor{r}") for r, (n, _) in enumerate(spike_ports)], current_port, False
    split = any(k == "inhibitory" for _, k in spike_ports)
    if split:
        spike_ports = [(n, "excitatory" if k == "signed" else k) for n, k in spike_ports]
    return spike_ports, current_port, split


def _parameters(path, model, scope, P):
    """(name, unit, default, comment) of each parameter, and the C++ that reads them. Literal
    defaults are numbers the Python class knows; expressions of other parameters are computed by
    the engine where the parameter is left out."""
    from pynestml.symbols.symbol import SymbolKind
    parameters, param_code = [], []
    for block in model.get_parameters_blocks():
        for decl in block.get_declarations():
            if decl.has_size_parameter():
                _fail(path, decl, "a vector parameter")
            for var in decl.get_variables():
                n = var.get_complete_name()
                expr = decl.get_expression() if decl.has_expression() else None
                default = _literal_value(P(expr)) if expr is not None else None
                u = _unit_of(scope.resolve_to_symbol(n, SymbolKind.VARIABLE))
                comment = decl.print_comment("").strip() if hasattr(decl, "print_comment") else ""
                parameters.append((n, u, default, comment))
                code = P(expr) if expr is not None else "0.0"
                param_code.append(f'  P.p_{_ident(n)} = has(given, "{n}") ? given.at("{n}") : ({code});')
    return parameters, param_code


def _internals(path, model, P):
    """The internals' C++ and fields, in the model's order; the propagators ODE-toolbox added
    (expressions of the parameters and the resolution alone) last, sorted."""
    internals = []
    for block in model.get_internals_blocks():
        for decl in block.get_declarations():
            if decl.has_size_parameter():
                _fail(path, decl, "a vector internal")
            for var in decl.get_variables():
                internals.append((var.get_complete_name(), decl))
    internals = [x for x in internals if not x[0].startswith("__P__")] + \
        sorted((x for x in internals if x[0].startswith("__P__")), key=lambda x: x[0])
    code = [f"  P.p_{_ident(n)} = {P(d.get_expression()) if d.has_expression() else '0.0'};" for n, d in internals]
    return code, [f"p_{_ident(n)}" for n, _ in internals]


def _state_read_at_start(path, model, lines, init_code):
    """Parameters and internals computed from state variables (an HH model's initial gating rates
    from V_m): each such variable's initial value, defined before the first line that reads it.
    Returns the lines with those definitions; refuses a variable whose initial value needs a
    parameter or internal computed later (the order would give it a value not yet set)."""
    initial = {}
    for line in init_code:
        m = re.match(r"\s*double v_(\w+) = (.*);$", line)
        if m:
            initial[m.group(1)] = m.group(2)
    out, assigned, defined = [], set(), set()

    def define(name, chain=()):
        if name in defined:
            return
        needs = set(re.findall(r"\bP\.p_(\w+)", initial.get(name, "")))
        if name not in initial or not needs <= assigned or name in chain:
            _fail(path, model, f"a parameter or internal computed from the state variable '{name}' before "
                               f"what its initial value needs ({', '.join(sorted(needs - assigned)) or name})")
        for other in dict.fromkeys(re.findall(r"\bv_(\w+)", initial[name])):
            define(other, chain + (name,))
        out.append(f"  const double v_{name} = {initial[name]};   // its initial value")
        defined.add(name)

    for line in lines:
        for name in dict.fromkeys(re.findall(r"\bv_(\w+)", line)):
            define(name)
        out.append(line)
        m = re.match(r"\s*P\.p_(\w+) =", line)
        if m:
            assigned.add(m.group(1))
    return out


def _initial_values(path, state_syms, P):
    """The initial values: the model's own state variables in its order, then the kernels'
    (NESTML places them in an order that varies from run to run), sorted."""
    init_code = []
    for n, decl in [x for x in state_syms if "__X__" not in x[0]] + sorted(
            (x for x in state_syms if "__X__" in x[0]), key=lambda x: x[0]):
        if decl.has_size_parameter():
            _fail(path, decl, "a vector state variable")
        code = P(decl.get_expression()) if decl.has_expression() else "0.0"
        init_code.append(f"    double v_{_ident(n)} = {code};")
    return init_code


def _note_initial(state, state_syms, P) -> None:
    """StateVariable.initial of each state variable, where its initial value is a number or the
    name of a parameter (V_m mV = E_L): what PyNN's cell type gives as its initial value."""
    decls = dict(state_syms)
    for s in state:
        decl = decls.get(s.name)
        if decl is None or not decl.has_expression():
            s.initial = "0" if decl is not None else ""
            continue
        expr = decl.get_expression()
        number = _literal_value(P(expr))
        if number is not None:
            s.initial = repr(number)
        elif getattr(expr, "is_variable", lambda: False)() and \
                expr.get_variable().get_complete_name() == str(expr).strip():
            s.initial = str(expr).strip()


def _step_statements(path, model, P, analytic, convolutions, update_exprs, spike_updates, spike_ports,
                     solver) -> dict:
    """The step's C++, part by part in its order: the convolutions' new values, the update block,
    the convolutions taking them, the spikes' jumps, the onReceive and the onCondition blocks."""
    body = _Statements(path, P, analytic, convolutions, update_exprs, solver)
    out = {"update": [], "spikes": [], "receive": [], "conditions": [],
           "conv_begin": [f"      const double t_{_ident(v)} = {P(update_exprs[v])};" for v in convolutions],
           "conv_end": [f"      v_{_ident(v)} = t_{_ident(v)};" for v in convolutions]}
    for blk in model.get_update_blocks():
        out["update"] += body.block(blk.get_stmts_body(), 3)
    for port, assignments in sorted(spike_updates.items()):
        for a in assignments:
            out["spikes"] += body.assignment(a, 3)
    for blk in model.get_on_receive_blocks():
        port = blk.get_port_name()
        if port not in [n for n, _ in spike_ports]:
            _fail(path, blk, f"onReceive for the port '{port}' (not a spike port of the model)")
        out["receive"].append(f"      if (in_{_ident(port)} != 0.0) {{")
        out["receive"] += body.block(blk.get_stmts_body(), 4)
        out["receive"].append("      }")
    for blk in model.get_on_condition_blocks():
        out["conditions"].append(f"      if ({P(blk.get_cond_expr())}) {{")
        out["conditions"] += body.block(blk.get_stmts_body(), 4)
        out["conditions"].append("      }")
    return out


def _function_code(path, model, P):
    """The model's function blocks as C++ functions of the parameters (P), the resolution (h) and
    their own arguments, declared first: they may call one another."""
    functions = list(model.get_functions())
    if not functions:
        return []
    body = _Statements(path, P, [], [], {}, _NumericSolver([], {}))

    def signature(f):
        args = "".join(f", double l_{_ident(a.get_name())}" for a in f.get_parameters())
        return f"double fn_{_ident(f.get_name())}(const Params& P, double h{args})"
    out = ["// The model's functions."] + [f"{signature(f)};" for f in functions]
    for f in functions:
        out += [f"{signature(f)} {{", "  (void)P;", "  (void)h;"] + body.block(f.get_stmts_body(), 1) + ["}"]
    return out


def _inline_code(path, model, ctx, P):
    """The inline expressions still referenced (after NESTML's expansion), as lambdas of the
    step; printing one may reference others."""
    inline_lines, inline_decls = [], {}
    for block in model.get_equations_blocks():
        for inline in block.get_inline_expressions():
            inline_decls[inline.get_variable_name()] = inline
    pending, done = set(ctx.inlines_used), set()
    while pending - done:
        n = sorted(pending - done)[0]
        done.add(n)
        if n not in inline_decls:
            raise Unsupported(f"{path}:0: the inline expression '{n}' could not be found")
        inline_lines.append((n, P(inline_decls[n].get_expression())))
        pending |= ctx.inlines_used
    return [f"      auto inline_{_ident(n)} = [&]() -> double {{ return {code}; }};" for n, code in
            reversed(inline_lines)]


def _input_lines(spike_ports, current_port):
    """The step's input per port, in the model's units: the excitatory row, the inhibitory row
    negated (split input), the injected current."""
    lines = []
    for n, kind in spike_ports:
        if kind.startswith("receptor"):
            row = f"double(in.receptor({int(kind[len('receptor'):])})[k])"
        else:
            row = "-double(in.inhibitory[k])" if kind == "inhibitory" else "double(in.input[k])"
        lines.append(f"      const double in_{_ident(n)} = {row} * scale;")
    if current_port:
        lines.append("      const double in_current = kCurrent ? in.current[k] : 0.0;")
    return lines


def _input_unit(model, spike_ports, unit, parameters):
    """The unit of weights, for messages: that of the variable an onReceive block changes first;
    pA for convolutions scaled by unit_psc (NESTML's current-based models); else NEST's word."""
    if not spike_ports:
        return None
    for blk in model.get_on_receive_blocks():
        stmts = [st for st in blk.get_stmts_body().get_stmts() if st.is_small_stmt()]
        small = [st.small_stmt if hasattr(st, "small_stmt") else st.get_small_stmt() for st in stmts]
        lhs = [x.get_assignment().get_variable().get_complete_name() for x in small if x.is_assignment()]
        if lhs and unit(lhs[0]):
            return unit(lhs[0])
    internals = [v.get_complete_name() for b in model.get_internals_blocks() for d in b.get_declarations()
                 for v in d.get_variables()]
    if "unit_psc" in internals or any(n == "unit_psc" for n, *_ in parameters):
        return "pA"
    return "weight units (NEST's)"


def _literal_value(printed: str):
    """The number of a default that NESTML's printer printed as a literal (NEST's units: ms, mV,
    pA, nS, ...: the printer applies the factors), else None (an expression of other names)."""
    text = printed.replace(" ", "")
    if not re.fullmatch(r"[-+()0-9.eE]+", text):
        return None
    try:
        return float(eval(text, {"__builtins__": {}}, {}))    # digits, signs and brackets only
    except Exception:
        return None


class _NumericSolver:
    """ODE-toolbox's numeric part, as NESTML's NEST target integrates it: RKF45 with adaptive steps
    over each time step (cpp/neurons/rkf45.hpp, GSL's scheme), GSL's standard error control with
    the absolute and relative tolerances gsl_abs_error_tol and gsl_rel_error_tol (parameters of
    the model, 1e-6 each as NESTML's), each neuron's step size kept from one time step to the
    next (a hidden state variable). integrate_odes(a, b) integrates a, b and the convolutions;
    the other variables keep their values (derivative 0), as NESTML's NEST target does."""
    STEP = "__rkf45_step_ms"
    TOLERANCES = (("gsl_abs_error_tol", "absolute error tolerance of the RKF45 integration (each state "
                   "variable's unit)"),
                  ("gsl_rel_error_tol", "relative error tolerance of the RKF45 integration"))

    def __init__(self, numeric, expressions):
        self.numeric, self.expressions = list(numeric), dict(expressions)

    def hidden_state(self):
        return (self.STEP,) if self.numeric else ()

    def parameters(self):
        return [(n, "", 1e-6, what) for n, what in self.TOLERANCES] if self.numeric else []

    def parameter_code(self):
        return [f'  P.p_{n} = has(given, "{n}") ? given.at("{n}") : 1e-6;'
                for n, _ in self.TOLERANCES] if self.numeric else []

    def initial_code(self):
        return [f"    double v_{self.STEP} = 0.0;"] if self.numeric else []   # 0: the first step is h

    def integrate(self, wanted, P, pad):
        """The C++ of one integration over the time step of every numeric variable."""
        if not self.numeric:
            return []
        n = len(self.numeric)
        named = [v for v in self.numeric if not wanted or v in wanted]
        if not named:
            return []
        moving = named + [v for v in self.numeric if "__X__" in v and v not in named]
        # the convolutions move within the integration but keep their values: they are
        # propagated once per step, outside integrate_odes() (NESTML's NEST target)
        kept = [v for v in self.numeric if "__X__" in v]
        out = [f"{pad}double y[{n}] = {{{', '.join(f'v_{_ident(v)}' for v in self.numeric)}}};",
               f"{pad}auto derivative = [&](const double* x, double* f) {{"]
        out += [f"{pad}  v_{_ident(v)} = x[{i}];" for i, v in enumerate(self.numeric)]
        out += [f"{pad}  f[{i}] = {P(self.expressions[v]) if v in moving else '0.0'};"
                for i, v in enumerate(self.numeric)]
        out += [f"{pad}}};"]
        out += [f"{pad}const double y0_{i} = y[{i}];" for i, v in enumerate(self.numeric) if v in kept]
        out += [f"{pad}rkf45::integrate<{n}>(derivative, h, y, v_{self.STEP}, "
                f"rkf45::SolutionControl{{P.p_gsl_abs_error_tol, P.p_gsl_rel_error_tol}});"]
        out += [f"{pad}v_{_ident(v)} = {f'y0_{i}' if v in kept else f'y[{i}]'};" for i, v in enumerate(self.numeric)]
        return out


class _Statements:
    """Prints NESTML statements as C++ (the update, onReceive and onCondition blocks)."""

    def __init__(self, path, print_expr, analytic, convolutions, update_exprs, solver):
        self.path, self.P = path, print_expr
        self.analytic, self.convolutions, self.update_exprs = analytic, convolutions, update_exprs
        self.solver = solver

    def block(self, body, depth):
        out = []
        for stmt in body.get_stmts():
            out += self.statement(stmt, depth)
        return out

    def statement(self, stmt, depth):
        pad = "  " * depth
        if stmt.is_small_stmt():
            s = stmt.small_stmt if hasattr(stmt, "small_stmt") else stmt.get_small_stmt()
            if s.is_assignment():
                return self.assignment(s.get_assignment(), depth)
            if s.is_declaration():
                d = s.get_declaration()
                if d.has_size_parameter():
                    _fail(self.path, d, "a vector declaration")
                out = []
                for var in d.get_variables():
                    init = self.P(d.get_expression()) if d.has_expression() else "0.0"
                    out.append(f"{pad}double l_{_ident(var.get_complete_name())} = {init};")
                return out
            if s.is_function_call():
                return self.call(s.get_function_call(), depth)
            if s.is_return_stmt():                      # in a function block
                r = s.get_return_stmt()
                return [f"{pad}return {self.P(r.get_expression()) if r.has_expression() else '0.0'};"]
            _fail(self.path, s, "this statement")
        c = stmt.compound_stmt if hasattr(stmt, "compound_stmt") else stmt.get_compound_stmt()
        if c.is_if_stmt():
            i = c.get_if_stmt()
            out = [f"{pad}if ({self.P(i.get_if_clause().get_condition())}) {{"]
            out += self.block(i.get_if_clause().get_stmts_body(), depth + 1)
            for e in i.get_elif_clauses():
                out.append(f"{pad}}} else if ({self.P(e.get_condition())}) {{")
                out += self.block(e.get_stmts_body(), depth + 1)
            if i.has_else_clause():
                out.append(f"{pad}}} else {{")
                out += self.block(i.get_else_clause().get_stmts_body(), depth + 1)
            out.append(f"{pad}}}")
            return out
        _fail(self.path, c, "a for or while loop")

    def assignment(self, a, depth):
        pad = "  " * depth
        lhs = self.P(a.get_variable())
        rhs = self.P(a.get_expression())
        op = "=" if a.is_direct_assignment else "+=" if a.is_compound_sum else "-=" if a.is_compound_minus else \
            "*=" if a.is_compound_product else "/=" if a.is_compound_quotient else None
        if op is None:
            _fail(self.path, a, "this assignment operator")
        return [f"{pad}{lhs} {op} {rhs};"]

    def call(self, call, depth):
        from pynestml.symbols.predefined_functions import PredefinedFunctions
        pad = "  " * depth
        n = call.get_name()
        if n == PredefinedFunctions.EMIT_SPIKE:
            if call.get_args():
                _fail(self.path, call, "emit_spike() with arguments")
            return [f"{pad}spiked = true;"]
        if n == PredefinedFunctions.INTEGRATE_ODES:
            wanted = [str(a) for a in call.get_args()]
            names = [v for v in self.analytic if v not in self.convolutions and (not wanted or v in wanted)]
            for w in wanted:
                if w not in self.analytic and w not in self.solver.numeric:
                    _fail(self.path, call, f"integrate_odes() of '{w}' (not a state variable with an ODE)")
            out = [f"{pad}{{  // integrate_odes({', '.join(wanted)})"]
            out += [f"{pad}  const double t_{_ident(v)} = {self.P(self.update_exprs[v])};" for v in names]
            out += self.solver.integrate(wanted, self.P, pad + "  ")
            out += [f"{pad}  v_{_ident(v)} = t_{_ident(v)};" for v in names]
            out.append(f"{pad}}}")
            return out
        _fail(self.path, call, f"the statement '{n}()'")


_TEMPLATE = """\
// Generated by ranvier.nestml from {path}
// (NESTML model '{nestml}', NESTML {nestml_version}); do not edit: regenerated when the model changes.
// Ranvier's neuron model interface: cpp/neurons/neuron_model.hpp; entry points: model_abi.hpp.
#include <cmath>
#include <map>
#include <memory>
#include <stdexcept>
#include <string>
#include <vector>

#include "neurons/model_abi.hpp"
#include "neurons/rkf45.hpp"

namespace ranvier {{
namespace {{

// The model's parameters (NESTML's names and NEST's units) and internals: a population's, or one
// neuron's where parameters vary per neuron.
struct Params {{
{fields}
}};

const char* const kParameters[] = {{{names}}};

// Parameters by name: the population's (PopulationSpec::parameters), or a neuron's (given_for).
using Given = std::map<std::string, double>;

bool has(const Given& given, const char* name) {{ return given.count(name) > 0; }}

// Neuron gid's parameters: the population's, with the neuron's own value of those that vary.
Given given_for(const PopulationSpec& spec, const Key& key, uint64_t gid) {{
  Given given = spec.parameters;
  for (const auto& [name, values] : spec.per_neuron)
    if (name != kInitialV) given[name] = neuron_value(values, key, gid, spec.first);
  return given;
}}

{functions}

// Parameters given, or the model's defaults (expressions of the parameters before them); then the
// internals (ODE-toolbox's propagators among them) at resolution h.
Params params_of(const Given& given, double h) {{
  Params P;
  (void)h;
{params}
{internals}
  return P;
}}

void check(const PopulationSpec& spec, double h) {{
  check_initial(spec, kInitialReset);
  check_per_neuron_entries(spec, kParameters);     // left-out parameters take the model's defaults
  for (const auto& [name, value] : spec.parameters) {{
    bool known = false;
    for (const char* const* n = kParameters; *n && !known; ++n) known = name == *n;
    if (!known)
      throw std::invalid_argument("population '" + spec.name + "' ({nestml}): unknown parameter '" + name + "'");
  }}
  const Params P = params_of(spec.parameters, h);     // per-neuron parameters at their means
  const double* values = reinterpret_cast<const double*>(&P);
  for (size_t i = 0; i < sizeof(Params) / sizeof(double); ++i)
    if (std::isnan(values[i]))          // infinities are bounds some models take (V_min = -inf)
      throw std::invalid_argument("population '" + spec.name + "' ({nestml}): a parameter or internal (propagator) "
                                  "is not a number at resolution " + std::to_string(h) + " ms");
}}

// The initial values of the state block, in its order, from each neuron's parameters; the
// membrane potential's from PopulationSpec::per_neuron's initial_V_mV where it is given.
void initialize(const PopulationSpec& spec, const Key& key, double h, const NeuronColumns& s) {{
  const bool varies = parameters_vary(spec);
  const Params population = params_of(spec.parameters, h);
  const auto initial_v = spec.per_neuron.find(kInitialV);
  for (uint64_t k = 0; k < s.n; ++k) {{
    const Params P = varies ? params_of(given_for(spec, key, s.gid[k]), h) : population;
{init}
{init_v}
{init_store}
  }}
}}

class Update final : public PopulationUpdate {{
 public:
  Update(const PopulationSpec& spec, const ModelContext& ctx, const NeuronColumns& columns)
      : params_(params_of(spec.parameters, ctx.h)), h_(ctx.h), key_(ctx.key) {{
    if (parameters_vary(spec))           // one set per neuron of the range, computed once
      for (uint64_t k = 0; k < columns.n; ++k) table_.push_back(params_of(given_for(spec, ctx.key, columns.gid[k]), h_));
  }}
  void step(const StepInput& step_input, const NeuronColumns& columns, uint8_t* fired) const override {{
    if (step_input.current)
      table_.empty() ? loop<true, false>(step_input, columns, fired) : loop<true, true>(step_input, columns, fired);
    else
      table_.empty() ? loop<false, false>(step_input, columns, fired) : loop<false, true>(step_input, columns, fired);
  }}

 private:
  // kCurrent: whether an injected current reaches the range in this step (a loop without the
  // test per neuron); kPerNeuron: whether each neuron has its own parameters (table_).
  template <bool kCurrent, bool kPerNeuron>
  void loop(const StepInput& step_input, const NeuronColumns& columns, uint8_t* fired) const {{
    // Local copies: the stores through `fired` (bytes) could alias anything reached through a
    // reference, which would keep the loop from being vectorised.
    const StepInput in = step_input;
    const NeuronColumns s = columns;
    const Params population = params_;
    const Params* const table = table_.data();
    (void)table;
    const double h = h_;
    (void)h;
    const double scale = in.input_scale;
    (void)scale;
    const uint64_t n = s.n;
    // In blocks, the block's spike flags kept as 64-bit integers and made bytes after it: GCC
    // does not vectorise a loop that stores bytes beside doubles, and does vectorise this one
    // where the model's statements allow it (if/else become selects; the same values per lane).
    constexpr uint64_t kBlock = 256;
    int64_t flags[kBlock];
    for (uint64_t block = 0; block < n; block += kBlock) {{
     const uint64_t block_end = n - block < kBlock ? n : block + kBlock;
     for (uint64_t k = block; k < block_end; ++k) {{
      const Params& P = kPerNeuron ? table[k] : population;
{load}
{inputs}
      bool spiked = false;
{random}
{inlines}
      // convolutions: new values from the step's start
{conv_begin}
      // the update block
{update}
{conv_end}
      // incoming spikes: the convolutions' jumps
{spikes}
      // onReceive
{receive}
      // onCondition
{conditions}
{store}
      flags[k - block] = spiked ? 1 : 0;
     }}
     for (uint64_t k = block; k < block_end; ++k) fired[k] = uint8_t(flags[k - block]);
    }}
  }}

  const Params params_;
  const double h_;
  const Key key_;                        // the run's seed: the random numbers of models that draw them
  std::vector<Params> table_;            // per neuron of the range, where parameters vary
}};

std::unique_ptr<PopulationUpdate> make_update(const PopulationSpec& spec, const ModelContext& ctx,
                                             const NeuronColumns& columns) {{
  return std::make_unique<Update>(spec, ctx, columns);
}}

// The model's spike ports as receptors (one input column each), where it has several.
NeuronModel::Layout layout(const PopulationSpec&) {{ return {{false, {extra}, {receptors}}}; }}

}}  // namespace

extern const NeuronModel generated_model{{"{engine_name}", check, initialize, make_update,
                                        /*split_input=*/{split}, /*extra_columns=*/{extra}, /*layout=*/{layout},
                                        /*takes_current=*/{current}, /*inhibitory_column=*/{inh_col}}};

}}  // namespace ranvier

RANVIER_EXPORT_NEURON_MODEL(ranvier::generated_model)
"""
