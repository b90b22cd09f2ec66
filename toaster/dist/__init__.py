"""The `dist` stage: distributed M3 (Hot Dog §4) -- location tags (Local / Dist(P) / Random),
transformers (Repart / Scatter / Gather), their simplification, statement blocks and block fusion."""
