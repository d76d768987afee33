//! Writes a workspace shaped like a large real one, for timing
//! `cargo xtask align-deps --check` against `cargo metadata --no-deps`:
//! `cargo run -p xtask --example gen_real_fleet -- DIR [CRATES=80] [MODULES=15] [FILE_BYTES=20000] [THISERROR_EVERY=6]`.
//!
//! The defaults are the large-workspace shape the timings use: 80 crates, about 1,300 files of about
//! 20 KB, a sixth of the crates using thiserror (60 `#[error]` variants
//! each; two source findings in all), the root still on thiserror 1.

#[path = "../tests/it/support.rs"]
mod support;

fn main() -> std::io::Result<()> {
    let args: Vec<String> = std::env::args().skip(1).collect();
    let Some(dir) = args.first() else {
        eprintln!(
            "usage: gen_real_fleet DIR [CRATES=80] [MODULES=15] [FILE_BYTES=20000] [THISERROR_EVERY=6]"
        );
        std::process::exit(2);
    };
    let d = support::RealShape::LARGE;
    let num = |i: usize, d: usize| args.get(i).map_or(d, |s| s.parse().expect("a number"));
    let shape = support::RealShape {
        crates: num(1, d.crates),
        modules: num(2, d.modules),
        file_bytes: num(3, d.file_bytes),
        thiserror_every: num(4, d.thiserror_every),
    };
    support::real_workspace(std::path::Path::new(dir), shape)?;
    println!("wrote {shape:?} to {dir}");
    Ok(())
}
