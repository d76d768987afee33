//! The op enums of the elementwise ops: [`Unary`] and [`Binary`].

/// An elementwise function of one tensor.
#[derive(Debug, Clone, Copy, PartialEq)]
pub enum Unary {
    /// `max(x, 0)`: `x` if `x > 0`, NaN stays NaN, else `+0.0`.
    Relu,
    /// `x` if `x > 0`, else `x * slope` (the slope rounded to the element type once).
    LeakyRelu(f64),
    /// `e^x`.
    Exp,
    /// `x * s` (`s` rounded to the element type once).
    Scale(f64),
}

impl Unary {
    /// The op's name for error messages.
    pub fn name(self) -> &'static str {
        match self {
            Unary::Relu => "relu",
            Unary::LeakyRelu(_) => "leaky_relu",
            Unary::Exp => "exp",
            Unary::Scale(_) => "scale",
        }
    }
}

/// An elementwise function of two tensors (see [`DenseOps::binary`](crate::DenseOps::binary) for broadcasting).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Binary {
    /// `a + b`.
    Add,
    /// `a - b`.
    Sub,
    /// `a * b`.
    Mul,
    /// `a / b`.
    Div,
}

impl Binary {
    /// The op's name for error messages.
    pub fn name(self) -> &'static str {
        match self {
            Binary::Add => "add",
            Binary::Sub => "sub",
            Binary::Mul => "mul",
            Binary::Div => "div",
        }
    }
}
