//! Writes a drifted fixture fleet for timing `align-deps`:
//! `cargo run -p xtask --example gen_fleet -- DIR [N=500] [--sources]`.
//! With `--sources`, each crate gets about 75 lines of thiserror 1 style
//! error types in two files (`support::source_lib`) instead of an empty
//! `src/lib.rs`, for timing the source side.

#[path = "../tests/it/support.rs"]
mod support;

fn main() -> std::io::Result<()> {
    let args: Vec<String> = std::env::args().skip(1).collect();
    let sources = args.iter().any(|a| a == "--sources");
    let mut pos = args.iter().filter(|a| !a.starts_with("--"));
    let dir = pos.next().cloned().unwrap_or_else(|| {
        eprintln!("usage: gen_fleet DIR [N] [--sources]");
        std::process::exit(2)
    });
    let n: usize = pos
        .next()
        .map_or(500, |s| s.parse().expect("N must be a number"));
    let fleet = support::drifted_fleet(std::path::Path::new(&dir), n)?;
    if sources {
        support::add_sources(&fleet, n)?;
    }
    println!(
        "wrote {n} crates to {dir}{}",
        if sources { " (with sources)" } else { "" }
    );
    Ok(())
}
