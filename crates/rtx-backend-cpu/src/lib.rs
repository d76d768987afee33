//! rtx-backend-cpu
