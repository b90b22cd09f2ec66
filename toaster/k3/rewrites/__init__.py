"""Named K3 -> K3 rewrites, each a law stated in its docstring; `k3_fuse` applies them.

    from toaster.k3.rewrites import REWRITES
    for r in REWRITES.values(): print(r.name, "--", r.law)

Families, one module each (imported in priority order):
  bags        operators over a one-element or an empty bag
  fusion      a producer (map, filter, flatten) streamed into the next operator
  branches    operators moved into if / union / let, where the producer is
  identities  map of the identity, x + 0, x * 1, beta reduction
"""
from toaster.k3.rewrites.registry import REWRITES, Rewrite, rewrite
from toaster.k3.rewrites import bags, fusion, branches, identities  # noqa: F401  (registers the rules)

__all__ = ["REWRITES", "Rewrite", "rewrite"]
