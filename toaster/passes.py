"""The pass manager: named passes with typed options, pipelines as data, one place that runs them.

A pass reads the IR of one stage and gives the IR of a stage (the same one for an optimization,
the next one for a lowering, named after both ends: `m3_to_k3`). Every pass is a class registered
by name; its *options are its dataclass fields*, so a pass is configured by a spec string

    k3_fuse                              the pass with its default options
    k3_fuse{rules=fold_of_map,beta}      options in braces: `key=value`, separated by spaces;
    m3_to_dist{partitioning=Q:local}     list values separated by commas

and a pipeline is a list of such specs (`parse_spec("m3_to_k3|k3_fuse{rules=beta}")`). A
function becomes a pass with the `@pass_` decorator; a class with `@register`:

    @register
    @dataclass(frozen=True)
    class DropNothing(Pass):
        name = "drop_nothing"; takes = "m3"; gives = "m3"
        verbose: bool = False
        def run(self, program, options):
            return program

`PassManager` runs a list of configured passes over an IR store (stage name -> IR), calls its
hooks after every pass (dumps, timings, user callbacks), records whether each pass changed the
program, and turns an exception raised inside a pass into an `InternalError` naming the pass and
its stage. User errors (`ToasterError`) pass through unchanged.
"""
from __future__ import annotations

import dataclasses
import re
import time
import typing
from dataclasses import dataclass, field
from typing import Callable, ClassVar

from toaster.errors import InternalError, ToasterError, UsageError

# Stage names, in pipeline order. A stage name means the same thing in every branch: the IR
# after the last pass of the branch's pipeline that gives that stage.
STAGES = ("sql", "calc", "m3", "k3", "imp", "llvm", "dist", "spark")


@dataclass(frozen=True)
class Options:
    """Compilation-wide settings every pass may consult (per-pass settings are pass fields)."""
    mode: str = "tuple"            # 'tuple' (single-tuple triggers) | 'batch' (batch triggers)
    source_file: str | None = None
    base_dir: str | None = None    # where relative FROM FILE / INCLUDE paths resolve


class Pass:
    """Base class of passes; subclasses are frozen dataclasses whose fields are their options.

    `skippable`: optimizations (takes == gives) may be left out of a pipeline, lowerings may not;
    a pass overrides it where that default is wrong (e.g. name resolution cannot be skipped).
    """
    name: ClassVar[str]
    takes: ClassVar[str]
    gives: ClassVar[str]
    description: ClassVar[str] = ""
    skippable: ClassVar[bool | None] = None
    why_required: ClassVar[str] = ""

    def run(self, ir, options: Options):
        raise NotImplementedError

    def __call__(self, ir, options: Options | None = None):
        return self.run(ir, options or Options())

    @classmethod
    def can_skip(cls) -> bool:
        return cls.takes == cls.gives if cls.skippable is None else cls.skippable

    @classmethod
    def option_fields(cls) -> tuple:
        return dataclasses.fields(cls) if dataclasses.is_dataclass(cls) else ()

    def with_options(self, **values) -> "Pass":
        """A copy with options set; string values are converted to the field's declared type."""
        fields = {f.name: f for f in self.option_fields()}
        typed = {}
        hints = typing.get_type_hints(type(self))
        for key, value in values.items():
            if key not in fields:
                known = ", ".join(fields) or "none"
                raise UsageError(f"pass {self.name} has no option {key!r} (options: {known})")
            typed[key] = _convert(hints.get(key, str), value, f"{self.name}.{key}") if isinstance(value, str) else value
        return dataclasses.replace(self, **typed)

    def spec(self) -> str:
        """This pass as a spec string: its name, then the options that differ from the defaults."""
        opts = []
        for f in self.option_fields():
            v = getattr(self, f.name)
            default = f.default if f.default is not dataclasses.MISSING else (
                f.default_factory() if f.default_factory is not dataclasses.MISSING else None)
            if v != default:
                opts.append(f"{f.name}={_render(v)}")
        return self.name + ("{" + " ".join(opts) + "}" if opts else "")


def _render(v) -> str:
    if isinstance(v, (tuple, list, frozenset, set)):
        return ",".join(_render(x) for x in v)
    if isinstance(v, bool):
        return "true" if v else "false"
    return str(v)


def _convert(tp, text: str, where: str):
    """Convert an option's text to its declared type (str, int, float, bool, Literal, tuple[...])."""
    origin, args = typing.get_origin(tp), typing.get_args(tp)
    if origin is typing.Union or (origin is not None and str(origin) == "<class 'types.UnionType'>"):
        non_none = [a for a in args if a is not type(None)]
        if text.lower() in ("none", "") and len(non_none) < len(args):
            return None
        return _convert(non_none[0], text, where)
    if origin is typing.Literal:
        if text not in args:
            raise UsageError(f"option {where}: {text!r} is not one of {', '.join(map(str, args))}")
        return text
    if origin in (tuple, list, frozenset):
        item = args[0] if args else str
        items = tuple(_convert(item, t.strip(), where) for t in text.split(",") if t.strip())
        return origin(items) if origin is not tuple else items
    if tp is bool:
        if text.lower() in ("1", "true", "yes", "on"):
            return True
        if text.lower() in ("0", "false", "no", "off"):
            return False
        raise UsageError(f"option {where}: {text!r} is not a boolean")
    if tp in (int, float):
        try:
            return tp(text)
        except ValueError:
            raise UsageError(f"option {where}: {text!r} is not a number") from None
    return text


# ------------------------------------------------------------------------ registry

REGISTRY: dict[str, type[Pass]] = {}
# stage -> verify(ir), run by the pass manager after every pass that gives the stage: an ill-formed
# program is reported against the pass that produced it, not the one that later trips over it
VERIFIERS: dict[str, Callable] = {}


def register_verifier(stage: str, verify: Callable) -> None:
    VERIFIERS[stage] = verify


def register(cls: type[Pass] | None = None, *, replace: bool = False):
    """Class decorator (or function): register a Pass subclass under its `name`."""
    def do(c):
        if not dataclasses.is_dataclass(c):
            c = dataclass(frozen=True)(c)
        if c.takes not in STAGES or c.gives not in STAGES:
            raise ValueError(f"pass {c.name}: unknown stage {c.takes!r} -> {c.gives!r}")
        old = REGISTRY.get(c.name)
        if old is not None and not replace and old is not c and old.__qualname__ != c.__qualname__:
            raise ValueError(f"a pass named {c.name!r} is already registered")
        REGISTRY[c.name] = c
        return c
    return do(cls) if cls is not None else do


def register_pass(p, *, replace: bool = False):
    """Register a pass class, or an instance of one (its class is registered)."""
    return register(p if isinstance(p, type) else type(p), replace=replace)


def pass_(name: str, takes: str, gives: str | None = None, description: str = "", *,
          skippable: bool | None = None, why_required: str = ""):
    """Decorator: register `fn(ir, options) -> ir` as a pass without options."""
    def deco(fn: Callable):
        doc = description or (fn.__doc__ or "").strip().split("\n")[0]
        cls = type(_class_name(name), (Pass,), {
            "name": name, "takes": takes, "gives": gives or takes, "description": doc,
            "skippable": skippable, "why_required": why_required, "__doc__": fn.__doc__,
            "__module__": fn.__module__, "__qualname__": _class_name(name),
            "run": lambda self, ir, options: fn(ir, options),
        })
        register(cls, replace=True)
        return fn
    return deco


def _class_name(name: str) -> str:
    return "".join(p.title() for p in name.split("_")) + "Pass"


def get_pass(name: str) -> Pass:
    """The registered pass `name`, with its default options."""
    return pass_class(name)()


def pass_class(name: str) -> type[Pass]:
    if name not in REGISTRY:         # a pass module not imported yet (the distributed branch's)
        from toaster.pipeline import load_pass_modules
        load_pass_modules()
    try:
        return REGISTRY[name]
    except KeyError:
        raise UsageError(f"unknown pass {name!r}; known: {', '.join(sorted(REGISTRY))}") from None


# ------------------------------------------------------------------------ specs

_SPEC = re.compile(r"\s*([A-Za-z_][A-Za-z0-9_]*)\s*(\{[^{}]*\})?\s*")


def parse_spec(text: str) -> list[Pass]:
    """`name{key=value ...}|name|...` (`|` or `,` between passes) -> configured pass instances."""
    out, pos = [], 0
    text = text.strip()
    while pos < len(text):
        m = _SPEC.match(text, pos)
        if not m or m.end() == pos:
            raise UsageError(f"bad pass pipeline at {text[pos:]!r} (expected name or name{{key=value}})")
        p = get_pass(m.group(1))
        if m.group(2):
            p = p.with_options(**_parse_options(m.group(2)[1:-1], m.group(1)))
        out.append(p)
        pos = m.end()
        if pos < len(text):
            if text[pos] not in "|,":
                raise UsageError(f"bad pass pipeline at {text[pos:]!r}: expected '|' between passes")
            pos += 1
    return out


def _parse_options(body: str, name: str) -> dict:
    opts = {}
    for item in body.split():
        key, eq, value = item.partition("=")
        if not eq:
            raise UsageError(f"pass {name}: option {item!r} must be key=value")
        opts[key] = value
    return opts


def run_spec(spec: str, ir, options: Options | None = None):
    """Run the passes of a spec string over `ir` (of the first pass's input stage); return the last IR."""
    passes = parse_spec(spec)
    if not passes:
        return ir
    pm = PassManager(passes, options or Options())
    store = pm.run({passes[0].takes: ir})
    return store[passes[-1].gives]


# ------------------------------------------------------------------------ running

@dataclass(frozen=True)
class PassRecord:
    """What one pass did: for dumps (`output`), timings and `--time-passes`."""
    branch: str
    index: int
    spec: str
    takes: str
    gives: str
    seconds: float
    changed: bool
    output: object = field(repr=False, compare=False)
    reused: bool = False   # taken from an identical earlier run (shared front end)


class PassManager:
    """Runs configured passes in order over a store {stage: IR}.

    `hooks` are called as hook(record) after each pass (dumps and timing live there);
    `before` hooks as hook(pass, ir) before it (print-before). `memo` (shared between managers of
    one compilation) lets a branch reuse the output of an identical prefix another branch ran.
    """

    def __init__(self, passes: list[Pass], options: Options, *, branch: str = "local",
                 hooks=(), before=(), memo: dict | None = None, source: str | None = None):
        self.passes = list(passes)
        self.options = options
        self.branch = branch
        self.hooks = list(hooks)
        self.before = list(before)
        self.memo = memo if memo is not None else {}
        self.records: list[PassRecord] = []
        self.done = 0
        self.source = source

    def last_producer(self, stage: str) -> int | None:
        return max((i for i, p in enumerate(self.passes) if p.gives == stage), default=None)

    def run(self, store: dict, until: int | None = None) -> dict:
        """Run the passes up to index `until` (inclusive; all when None); returns the store."""
        end = len(self.passes) - 1 if until is None else until
        while self.done <= end:
            self.step(store)
        return store

    def step(self, store: dict) -> None:
        p = self.passes[self.done]
        key = (self.options, tuple(q.spec() for q in self.passes[:self.done + 1]), self.source)
        if p.takes not in store:
            raise UsageError(f"pass {p.name} reads stage {p.takes}, which no earlier pass produced "
                             f"in the {self.branch} pipeline")
        ir = store[p.takes]
        if key in self.memo:
            out, seconds, changed = self.memo[key]
            rec = PassRecord(self.branch, self.done, p.spec(), p.takes, p.gives, seconds, changed, out, True)
        else:
            for hook in self.before:
                hook(p, ir)
            t0 = time.perf_counter()
            try:
                out = p.run(ir, self.options)
            except ToasterError as e:
                if e.file is None and self.options.source_file and p.takes == "sql":
                    e.located(self.options.source_file)
                raise
            except (KeyboardInterrupt, SystemExit):
                raise
            except Exception as e:
                raise InternalError(p.name, p.gives, self.options.source_file, e) from e
            seconds = time.perf_counter() - t0
            verify = VERIFIERS.get(p.gives)
            if verify is not None and out is not None:
                try:
                    verify(out)
                except ToasterError:
                    raise          # a construct the stage refuses by name: the user's to know
                except Exception as e:
                    raise InternalError(p.name, p.gives, self.options.source_file, e,
                                        during="verifying its output") from e
            if out is None:
                raise InternalError(p.name, p.gives, self.options.source_file,
                                    RuntimeError("the pass returned None instead of an IR"))
            changed = p.takes != p.gives or not (out is ir or _same(out, ir))
            self.memo[key] = (out, seconds, changed)
            rec = PassRecord(self.branch, self.done, p.spec(), p.takes, p.gives, seconds, changed, out)
        store[p.gives] = out
        self.records.append(rec)
        self.done += 1
        for hook in self.hooks:
            try:
                hook(rec)
            except (ToasterError, KeyboardInterrupt, SystemExit, BrokenPipeError, OSError):
                raise
            except Exception as e:   # a printer that is not total, a user callback that fails
                raise InternalError(p.name, p.gives, self.options.source_file, e,
                                    during="handing its output to a dump or callback") from e


def _same(a, b) -> bool:
    try:
        return a == b
    except RecursionError:
        return False
