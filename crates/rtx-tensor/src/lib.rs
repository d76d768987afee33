//! rtx-tensor
