"""The `dist` stage: distributed M3 (Hot Dog §4) -- location tags (Local / Dist(P) / Random),
transformers (Repart / Scatter / Gather), their simplification, statement blocks and block fusion."""

from toaster.dist import ir as _ir
from toaster.errors import UnsupportedError as _Unsupported
from toaster.passes import register_verifier


def _verify(prog) -> None:
    """ir.verify, except where a tag cannot be computed for a construct the PySpark generator
    refuses by name later (nested MIN/MAX): the IR still prints, parses and is dumped."""
    try:
        _ir.verify(prog)
    except _Unsupported:
        pass


register_verifier("dist", _verify)   # after m3_to_dist, dist_simplify, dist_blocks, dist_fuse
