//! Writes a drifted fixture fleet for timing `align-deps`:
//! `cargo run -p xtask --example gen_fleet -- DIR [N=500]`.

fn main() -> std::io::Result<()> {
    let mut args = std::env::args().skip(1);
    let dir = args.next().unwrap_or_else(|| {
        eprintln!("usage: gen_fleet DIR [N]");
        std::process::exit(2)
    });
    let n: usize = args
        .next()
        .map_or(500, |s| s.parse().expect("N must be a number"));
    xtask::align_deps::fixture::drifted_fleet(std::path::Path::new(&dir), n)?;
    println!("wrote {n} crates to {dir}");
    Ok(())
}
