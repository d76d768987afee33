//! Reading Rust source without compiling it: comments split from code
//! ([`lexer`]), the module tree of a file (`mod` declarations, `#[path]`,
//! `include!`: [`modscan`]), and layout-free token streams ([`tokens`]).
//!
//! A leaf shared by `fmt-check` (which files a crate reaches; whether
//! rustfmt changed only layout) and `align-deps`' thiserror source scan
//! (which files to read). It imports only [`crate::fsutil`].

pub(crate) mod lexer;
pub(crate) mod modscan;
pub(crate) mod tokens;
