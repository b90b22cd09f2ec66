"""The code of a distributed program's statement blocks, through the shared lowering.

A statement block (local: on the driver; dist: on every partition) is ordinary single-node
trigger code (Hot Dog §4.4), so it is compiled by the stages the local branch uses after M3:
each block becomes a one-trigger batch-mode M3 program (its statements as the body of a batch
trigger on the trigger's relation; the maps it reads and writes declared with their key and
value types from the DistProgram; the batch readable as DELTA_<R>), which runs through
`m3_to_k3 | k3_fuse | k3_cse | k3_to_imp | imp_verify` (the pass manager, with the registered
passes; the list is an option of dist_to_spark). The imperative statements are what pygen turns
into Python, and what imp_to_llvm would compile for native executors.

The scratch maps the lowering adds (group-by and replace temps, kind 'temp') are local to the
block's function; every other map the code uses is a parameter (a view, a dist temp, DELTA_R).
"""
from __future__ import annotations

from dataclasses import dataclass

from toaster.calculus import ir as C
from toaster.calculus.maps import Event
from toaster.errors import UnsupportedError
from toaster.imperative.ir import (Assign, BinOp, Call, Cast, Declare, ForEach, If, ImpProgram, MapAdd, MapClear,
                                   MapGet, MapSet, Not)
from toaster.imperative.printer import print_imp
from toaster.m3.ir import M3Program, MapDecl, Trigger
from toaster.passes import Options, PassManager, get_pass
from toaster.dist.ir import Block, DistProgram, delta_map_name, map_names
# the modules whose import registers BLOCK_PASSES
import toaster.k3.from_m3  # noqa: F401
import toaster.k3.passes  # noqa: F401
import toaster.imperative.from_k3  # noqa: F401
import toaster.imperative.passes  # noqa: F401

BLOCK_PASSES = ("m3_to_k3", "k3_fuse", "k3_cse", "k3_to_imp", "imp_verify")


@dataclass(frozen=True)
class BlockCode:
    """One statement block, lowered: its M3 program, the imperative program the passes gave,
    and the maps its function takes (params), writes, starts empty (fresh) or keeps local."""
    name: str          # the generated function's name: local_block_N / dist_block_N
    mode: str          # 'local' | 'dist'
    relation: str      # the relation whose batch trigger the block belongs to
    m3: M3Program
    imp: ImpProgram
    params: tuple      # maps passed in (read or written), sorted
    written: tuple     # block-level maps written, in order
    fresh: tuple       # dist temps the block writes: they start empty
    scratch: tuple     # the lowering's temp maps: local to the function

    @property
    def body(self) -> tuple:
        return self.imp.triggers[0].body

    def __str__(self) -> str:
        event = f"ON BATCH {self.relation}" if self.relation else "ON SYSTEM READY"
        return f"-- {self.name} ({event}, {self.mode})\n" + print_imp(self.imp)


def block_m3(prog: DistProgram, relation: str, block: Block) -> M3Program:
    """The block as a batch-mode M3 program of one trigger on `relation`."""
    maps = prog.tags()
    stmts = tuple(it.stmt for it in block.items)
    names = []
    for s in stmts:
        names += sorted(map_names(s.rhs)) + [s.target]
    decls = []
    for n in dict.fromkeys(names):
        if n == delta_map_name(relation):
            continue                      # m3_to_k3 declares the batch's delta map itself
        if n not in maps:
            raise UnsupportedError(f"map {n} read by a statement block is not declared")
        m = maps[n]
        decls.append(MapDecl(m.name, m.keys, m.type, C.MapRef(m.name, m.keys, m.type)))
    # the ON SYSTEM READY trigger (relation '') sets initial values once, on the driver
    trig = Trigger(Event("batch", relation, ()) if relation else Event("ready", "", ()), stmts)
    return M3Program(prog.relations, tuple(decls), (trig,), (), mode="batch")


def lower_block(prog: DistProgram, relation: str, block: Block, name: str, passes,
                options: Options) -> BlockCode:
    m3 = block_m3(prog, relation, block)
    pm = PassManager(list(passes), options, branch="distributed")
    store = pm.run({"m3": m3})
    imp = store["imp"]
    if len(imp.triggers) != 1:
        raise AssertionError(f"{name}: the block lowered to {len(imp.triggers)} triggers")
    kinds = {m.name: m.kind for m in imp.maps}
    scratch = tuple(n for n, k in kinds.items() if k == "temp")
    clash = set(scratch) & set(prog.tags())
    if clash:
        raise AssertionError(f"{name}: the lowering's temp maps {sorted(clash)} clash with program maps")
    used, written = _maps_used(imp.triggers[0].body)
    used -= set(scratch)
    written = [w for w in written if w not in scratch]
    dist_maps = prog.tags()
    fresh = tuple(w for w in dict.fromkeys(written) if w in dist_maps and dist_maps[w].kind == "temp")
    params = tuple(sorted(used - set(fresh)))
    return BlockCode(name, block.mode, relation, m3, imp, params, tuple(dict.fromkeys(written)), fresh,
                     tuple(sorted(scratch)))


def block_passes(specs) -> list:
    """The configured passes of a block pipeline (names from dist_to_spark's option)."""
    passes = [get_pass(s) for s in specs]
    if not passes or passes[0].takes != "m3" or passes[-1].gives != "imp":
        raise UnsupportedError("dist_to_spark.block_passes must lead from stage m3 to stage imp")
    return passes


def _maps_used(stmts) -> tuple[set, list]:
    """(every map the statements read or write, the maps they write in order)."""
    used, written = set(), []

    def expr(e):
        match e:
            case MapGet(m, keys, _):
                used.add(m)
                for k in keys:
                    expr(k)
            case BinOp(_, a, b, _):
                expr(a)
                expr(b)
            case Not(a, _) | Cast(_, a):
                expr(a)
            case Call(_, args, _):
                for a in args:
                    expr(a)

    def walk(ss):
        for s in ss:
            match s:
                case Declare(_, e) | Assign(_, e):
                    expr(e)
                case ForEach(m, pattern, _, _, body):
                    used.add(m)
                    for p in pattern:
                        if p is not None:
                            expr(p)
                    walk(body)
                case If(cond, then, orelse):
                    expr(cond)
                    walk(then)
                    walk(orelse)
                case MapAdd(m, keys, v) | MapSet(m, keys, v):
                    used.add(m)
                    written.append(m)
                    for k in keys:
                        expr(k)
                    expr(v)
                case MapClear(m):
                    used.add(m)
                    written.append(m)
                case _:
                    raise AssertionError(f"imperative statement {type(s).__name__} in a block")
    walk(stmts)
    return used, written
