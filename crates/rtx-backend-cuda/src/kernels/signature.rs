//! The host half of the kernel table: `kernel_enum!`, which the table
//! (`table.rs`, `with_kernel_table!`) feeds to declare `Kernel`, one
//! variant per entry point with its CUDA name, and `Signature`, one variant
//! per declared parameter list with its parameters' names and types. The
//! device half (`kernels/launch.rs`) is fed the same table and generates one
//! typed launcher per signature, so a parameter's name, type and place are
//! written once, in the table, and checked against kernels/*.cu by
//! `table_tests.rs`.
//!
//! The table's vocabulary of parameter types, as CUDA would spell them:
//! `*const X` / `*mut X` a device pointer to `const X` / `X`; `u32`, `u64`,
//! `i32` the integers of that width, `f32` / `f64` (CUDA's `float` /
//! `double`, in a pointer of a fixed type); a struct passed by value by its
//! CUDA name (`SpanParams`, `TensorMap`, ...); three letters a kernel
//! binds (`[T = float]`): `T` a float element (`float`, `double`, and the
//! half storage types `bf16`, `f16`), `V` a
//! vector of one (`float4` ... `double`, and the half storage types
//! `bf16` ... `f16x8` of kernels/common.cuh; a `*const T` of a `V` kernel
//! points to its scalar), `E` a word a copy kernel moves (`u16`, `u32`,
//! `uint2`, `uint4`, ...); and `A`, which a kernel does not bind: the type
//! a `T` or `V` kernel computes in (`float` for `float` and the half types,
//! `double` for `double`), for its scalars and its f32 scratch.

/// Declares `Kernel` and `Signature` from the table (see the module doc).
macro_rules! kernel_enum {
    (
        signatures {
            $(
                $(#[$sm:meta])*
                $sig:ident [$($gen:ident)?] (
                    $($field:ident : $(* $q:ident)? $ty:ident),* $(,)?
                );
            )*
        }
        kernels {
            $(
                $(#[$km:meta])*
                $v:ident = $name:literal : $ksig:ident [$($letter:ident = $cty:ident)?]
                    $(by $mac:ident ($args:literal))? $(for $fam:ident $fargs:tt)?,
            )*
        }
    ) => {
        /// An entry point of kernels/*.cu.
        #[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
        pub(crate) enum Kernel {
            $(
                $(#[$km])*
                #[doc = concat!("`", $name, "`")]
                $v,
            )*
        }

        /// A parameter list of one or more kernels, with one typed launcher
        /// (`kernels/launch.rs`).
        #[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
        pub(crate) enum Signature {
            $(
                $(#[$sm])*
                $sig,
            )*
        }

        impl Signature {
            /// Every signature, in declaration order.
            #[allow(dead_code)]
            pub(crate) const ALL: &'static [Signature] = &[$(Signature::$sig,)*];

            /// The launcher's name.
            pub(crate) const fn name(self) -> &'static str {
                match self {
                    $(Signature::$sig => stringify!($sig),)*
                }
            }

            /// `(name, type)` of every parameter, in order, the type in the
            /// table's vocabulary (module doc) as the tokens were written.
            pub(crate) const fn params(self) -> &'static [(&'static str, &'static str)] {
                match self {
                    $(Signature::$sig => &[$((stringify!($field), stringify!($(* $q)? $ty)),)*],)*
                }
            }

            /// The letter its kernels bind (`T`, `V`, `E`), if any.
            pub(crate) const fn letter(self) -> Option<&'static str> {
                match self {
                    $(Signature::$sig => {
                        const L: &[&str] = &[$(stringify!($gen))?];
                        match L {
                            [l] => Some(l),
                            _ => None,
                        }
                    })*
                }
            }
        }

        impl Kernel {
            /// Every kernel, in declaration order (`ALL[k as usize] == k`).
            pub(crate) const ALL: &'static [Kernel] = &[$(Kernel::$v,)*];

            /// The kernel's `extern "C"` name.
            pub(crate) const fn name(self) -> &'static str {
                match self {
                    $(Kernel::$v => $name,)*
                }
            }

            /// The parameter list it takes.
            pub(crate) const fn signature(self) -> Signature {
                match self {
                    $(Kernel::$v => Signature::$ksig,)*
                }
            }

            /// The kernel-defining macro of kernels/*.cu it is instantiated
            /// with and the macro's arguments after the kernel's name, e.g.
            /// `("RTX_SCATTER", "float4, true, false")`; `None` for a kernel
            /// written out in its file. `source.rs` writes the invocation.
            pub(crate) const fn instantiation(self) -> Option<(&'static str, &'static str)> {
                match self {
                    $(Kernel::$v => {
                        const I: &[(&str, &str)] = &[$((stringify!($mac), $args))?];
                        match I {
                            [i] => Some(*i),
                            _ => None,
                        }
                    })*
                }
            }

            /// The kernel of a family's choice: the table's `for` clauses
            /// as match arms, so a choice without a kernel, or two kernels
            /// for one choice, does not compile.
            #[deny(unreachable_patterns)]
            pub(crate) const fn of(choice: Family) -> Kernel {
                match choice {
                    $($(Family::$fam $fargs => Kernel::$v,)?)*
                }
            }

            /// The letter of its signature and the CUDA type it binds, e.g.
            /// `("V", "float4")`; `None` for a signature without a letter.
            pub(crate) const fn binding(self) -> Option<(&'static str, &'static str)> {
                match self {
                    $(Kernel::$v => {
                        const B: &[(&str, &str)] = &[$((stringify!($letter), stringify!($cty)))?];
                        match B {
                            [b] => Some(*b),
                            _ => None,
                        }
                    })*
                }
            }
        }
    };
}
pub(crate) use kernel_enum;
