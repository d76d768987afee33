//! rtx-backend-cuda
