//! The training ops' kernels (kernels/train.cu): one family per op, each
//! instantiated for the four element types, picked by [`Kernel::train`].

use super::Kernel;
use super::choice::Float;

/// An element-typed kernel family of kernels/train.cu.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Train {
    /// `dropout_*`.
    Dropout,
    /// `cross_entropy_*`.
    CrossEntropy,
    /// `regression_*`.
    Regression,
    /// `adam_*`.
    Adam,
    /// `sgd_*`.
    Sgd,
    /// `ln_*`.
    Ln,
}

impl Train {
    /// Every family.
    #[cfg(test)]
    pub(crate) const ALL: [Train; 6] = [
        Train::Dropout,
        Train::CrossEntropy,
        Train::Regression,
        Train::Adam,
        Train::Sgd,
        Train::Ln,
    ];

    /// The family's name, as its kernels' names begin.
    #[cfg(test)]
    pub(crate) fn name(self) -> &'static str {
        match self {
            Train::Dropout => "dropout",
            Train::CrossEntropy => "cross_entropy",
            Train::Regression => "regression",
            Train::Adam => "adam",
            Train::Sgd => "sgd",
            Train::Ln => "ln",
        }
    }
}

impl Kernel {
    /// The training kernel `family` for `t`.
    pub(crate) fn train(family: Train, t: Float) -> Kernel {
        use Float::{Bf16, F16, F32, F64};
        match (family, t) {
            (Train::Dropout, F32) => Kernel::DropoutF32,
            (Train::Dropout, F64) => Kernel::DropoutF64,
            (Train::Dropout, Bf16) => Kernel::DropoutBf16,
            (Train::Dropout, F16) => Kernel::DropoutF16,
            (Train::CrossEntropy, F32) => Kernel::CrossEntropyF32,
            (Train::CrossEntropy, F64) => Kernel::CrossEntropyF64,
            (Train::CrossEntropy, Bf16) => Kernel::CrossEntropyBf16,
            (Train::CrossEntropy, F16) => Kernel::CrossEntropyF16,
            (Train::Regression, F32) => Kernel::RegressionF32,
            (Train::Regression, F64) => Kernel::RegressionF64,
            (Train::Regression, Bf16) => Kernel::RegressionBf16,
            (Train::Regression, F16) => Kernel::RegressionF16,
            (Train::Adam, F32) => Kernel::AdamF32,
            (Train::Adam, F64) => Kernel::AdamF64,
            (Train::Adam, Bf16) => Kernel::AdamBf16,
            (Train::Adam, F16) => Kernel::AdamF16,
            (Train::Sgd, F32) => Kernel::SgdF32,
            (Train::Sgd, F64) => Kernel::SgdF64,
            (Train::Sgd, Bf16) => Kernel::SgdBf16,
            (Train::Sgd, F16) => Kernel::SgdF16,
            (Train::Ln, F32) => Kernel::LnF32,
            (Train::Ln, F64) => Kernel::LnF64,
            (Train::Ln, Bf16) => Kernel::LnBf16,
            (Train::Ln, F16) => Kernel::LnF16,
        }
    }
}
