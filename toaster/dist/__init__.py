"""The `dist` stage: distributed M3 (Hot Dog §4) -- location tags (Local / Dist(P) / Random),
transformers (Repart / Scatter / Gather), their simplification, statement blocks and block fusion."""

from toaster.dist.ir import verify as _verify
from toaster.passes import register_verifier

register_verifier("dist", _verify)   # after m3_to_dist, dist_simplify, dist_blocks, dist_fuse
