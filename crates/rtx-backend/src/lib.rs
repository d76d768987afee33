//! rtx-backend
