//! Token streams for `--verify-formatting-only` (being built).
