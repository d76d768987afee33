//! The one error enum of rtx backends.

/// Errors of backend operations. No op panics on bad input: it returns one of these.
#[derive(Debug, thiserror::Error)]
pub enum Error {
    /// An index is not below the number of rows it selects from.
    #[error("index out of range: idx[{position}] = {value}, but there are only {bound} rows")]
    IndexOutOfRange {
        /// Position in the index list.
        position: usize,
        /// The index value found there.
        value: u64,
        /// The number of rows (valid indices are `0..bound`).
        bound: usize,
    },
    /// Tensor shapes that do not fit together.
    #[error("{op}: shape mismatch: {detail}")]
    ShapeMismatch {
        /// The operation.
        op: &'static str,
        /// Both shapes and what was expected.
        detail: String,
    },
    /// A tensor of the wrong rank.
    #[error("{op}: `{arg}` must have rank {expected}, got shape {shape:?}")]
    Rank {
        /// The operation.
        op: &'static str,
        /// The argument.
        arg: &'static str,
        /// The rank wanted.
        expected: usize,
        /// The shape given.
        shape: Vec<usize>,
    },
    /// Host data whose length does not match the shape.
    #[error("{len} elements given for shape {shape:?} ({expected} elements)")]
    LengthMismatch {
        /// Elements given.
        len: usize,
        /// The shape.
        shape: Vec<usize>,
        /// Elements the shape holds.
        expected: usize,
    },
    /// More index entries than a plan can address (positions are `u32`).
    #[error("index list of {len} entries is longer than the supported maximum of {max}")]
    TooManyIndices {
        /// Entries given.
        len: usize,
        /// The maximum.
        max: usize,
    },
    /// An index list shifted by an offset (a concatenation) would pass `u32::MAX`.
    #[error(
        "index list {part} of the concatenation: its largest index {max} plus the offset \
         {offset} does not fit in u32"
    )]
    IndexOffsetOverflow {
        /// Which part (0-based).
        part: usize,
        /// Its largest index.
        max: u32,
        /// The offset asked for.
        offset: u32,
    },
    /// A size derived from the arguments (other than a shape's element count,
    /// which is [`Error::Layout`]) does not fit in `usize`.
    #[error("{op}: {what} overflows 64 bits")]
    SizeOverflow {
        /// The operation.
        op: &'static str,
        /// The size that overflows, with its operands.
        what: String,
    },
    /// Host memory could not be reserved (a huge but valid size; see
    /// [`try_with_capacity`](crate::implement::try_with_capacity)).
    #[error("cannot allocate host memory for {elements} elements of {element_bytes} bytes")]
    HostAllocation {
        /// Elements asked for.
        elements: usize,
        /// Bytes per element.
        element_bytes: usize,
    },
    /// A neighbour-sampling request that does not fit the graph (see
    /// [`crate::sample::check_spec`]).
    #[error("sample: {0}")]
    Sample(String),
    /// An argument outside its domain (a dropout probability not in
    /// `[0, 1)`, an optimizer step of 0, a hyperparameter combination the
    /// optimizer rejects).
    #[error("{op}: {detail}")]
    InvalidArgument {
        /// The operation.
        op: &'static str,
        /// The argument, its value and what is allowed.
        detail: String,
    },
    /// An op this backend does not (yet) run for an element type.
    #[error("{op}: element type {dtype} is not supported by this backend")]
    UnsupportedDType {
        /// The operation.
        op: &'static str,
        /// The element type.
        dtype: crate::DType,
    },
    /// A layout error (bad dims, a shape whose element count overflows).
    #[error(transparent)]
    Layout(#[from] rtx_tensor::Error),
    /// An error of a specific backend (device, driver, compiler), kept whole.
    #[error("{backend}: {source}")]
    Backend {
        /// The backend's name.
        backend: String,
        /// The backend's own error.
        #[source]
        source: Box<dyn std::error::Error + Send + Sync + 'static>,
    },
}

/// `Result` with [`Error`].
pub type Result<T> = std::result::Result<T, Error>;
