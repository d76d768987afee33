//! rtx-gnn
