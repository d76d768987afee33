//! Files pulled in by `include!` in expression position (`include!("x.rs")`
//! where `x.rs` holds an expression, such as a raw string literal, or
//! statements): rustfmt formats files of items only and rejects these
//! ("expected item"), while `cargo fmt` never reaches them. They are
//! reported as not formattable as items and left alone, not a failure.

use std::collections::HashMap;

use super::check::{FileReport, Verdict};
use super::files::FileInventory;
use crate::rust_src::modscan;

/// Turns the verdict of every file that rustfmt rejected, that some file of
/// the plan `include!`s, and that parses as an expression or a list of
/// statements (a block's inside) into [`Verdict::NotItems`] naming the file
/// that includes it. `reports` is in `plan.files` order.
pub fn set_aside(plan: &FileInventory, reports: &mut [FileReport]) {
    if !reports
        .iter()
        .any(|r| matches!(r.verdict, Verdict::Error(_)))
    {
        return;
    }
    // included file -> the first file (in path order) that includes it
    let mut includer: HashMap<usize, usize> = HashMap::new();
    for (i, r) in reports.iter().enumerate() {
        if !r.original.contains("include") {
            continue;
        }
        let dir = plan.files[i].path.parent().unwrap_or(&plan.root);
        for inc in modscan::include_paths(&r.original) {
            if let Some(k) = plan.file_index(&crate::fsutil::normalize(&dir.join(inc))) {
                includer.entry(k).or_insert(i);
            }
        }
    }
    for (k, by) in includer {
        let r = &mut reports[k];
        if matches!(r.verdict, Verdict::Error(_)) && is_expression(&r.original) {
            r.verdict = Verdict::NotItems(plan.files[by].rel.clone());
        }
    }
}

/// Whether `text` is an expression or a block's statements, not items.
fn is_expression(text: &str) -> bool {
    use syn::parse::Parser as _;
    let ok = syn::parse_file(text).is_err()
        && (syn::parse_str::<syn::Expr>(text).is_ok()
            || syn::Block::parse_within.parse_str(text).is_ok());
    proc_macro2::extra::invalidate_current_thread_spans();
    ok
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn expressions_and_statements_are_not_items() {
        assert!(is_expression("r#\"a trace\"#\n"));
        assert!(is_expression("{ let x = 1; x + 1 }"));
        assert!(is_expression("let x = 1;\nx"));
        assert!(!is_expression("pub fn f() {}\n"));
        assert!(!is_expression("fn (\n"));
    }
}
