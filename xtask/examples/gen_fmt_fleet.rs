//! Generates a large Cargo workspace for timing `cargo xtask fmt-check`
//! against `cargo fmt --all --check`:
//!
//! ```text
//! cargo run -p xtask --example gen_fmt_fleet -- DIR [CRATES] [MODULES_PER_CRATE] [INCLUDED_PER_CRATE] [UNFORMATTED_EVERY]
//! (cd DIR && cargo fmt --all)   # start from a formatted tree
//! ```
//!
//! With `UNFORMATTED_EVERY = N > 0` every Nth module file ends with an
//! unformatted function (for timing a tree with many unformatted files; do
//! not run `cargo fmt --all` on it then).
//!
//! Each crate has a `lib.rs` declaring its modules (half of them in
//! subdirectories with their own children), an integration test, and
//! `INCLUDED_PER_CRATE` `include!`d files, which `cargo fmt` never reaches.

use std::fmt::Write as _;
use std::path::Path;

fn module(seed: usize) -> String {
    let mut s = String::new();
    let _ = writeln!(s, "//! Module {seed}.\n\nuse std::collections::BTreeMap;\n");
    for k in 0..6 {
        let _ = write!(
            s,
            r#"/// Item {k} of module {seed}.
#[derive(Debug, Clone, Default)]
pub struct Item{k} {{
    pub name: String,
    pub values: Vec<u64>,
    pub index: BTreeMap<String, usize>,
}}

impl Item{k} {{
    /// Sums the values above `floor`, saturating.
    pub fn total(&self, floor: u64) -> u64 {{
        self.values
            .iter()
            .filter(|v| **v > floor)
            .fold(0u64, |acc, v| acc.saturating_add(*v))
    }}

    pub fn describe(&self) -> String {{
        match self.values.len() {{
            0 => format!("{{}}: empty", self.name),
            1 => format!("{{}}: one value ({{}})", self.name, self.values[0]),
            n => format!("{{}}: {{n}} values, total {{}}", self.name, self.total({seed})),
        }}
    }}
}}

"#
        );
    }
    s
}

fn write(path: &Path, text: &str) {
    std::fs::create_dir_all(path.parent().unwrap()).unwrap();
    std::fs::write(path, text).unwrap();
}

fn main() {
    let args: Vec<String> = std::env::args().skip(1).collect();
    let Some(dir) = args.first() else {
        eprintln!(
            "usage: gen_fmt_fleet DIR [CRATES=20] [MODULES_PER_CRATE=150] [INCLUDED_PER_CRATE=0] [UNFORMATTED_EVERY=0]"
        );
        std::process::exit(2);
    };
    let num = |i: usize, d: usize| args.get(i).map_or(d, |s| s.parse().expect("a number"));
    let (crates, modules, included, every) = (num(1, 20), num(2, 150), num(3, 0), num(4, 0));
    let module = |seed: usize| {
        let mut text = module(seed);
        if every > 0 && seed.is_multiple_of(every) {
            text.push_str("pub fn  drift( a:u32,b :u32)->u32{a+b}\n");
        }
        text
    };
    let root = Path::new(dir);
    let members: Vec<String> = (0..crates).map(|c| format!("\"crates/c{c}\"")).collect();
    write(
        &root.join("Cargo.toml"),
        &format!(
            "[workspace]\nresolver = \"2\"\nmembers = [{}]\n\n[workspace.package]\nedition = \"2021\"\n",
            members.join(", ")
        ),
    );
    for c in 0..crates {
        let dir = root.join(format!("crates/c{c}"));
        let edition = if c % 3 == 0 { "2018" } else { "2021" };
        write(
            &dir.join("Cargo.toml"),
            &format!("[package]\nname = \"c{c}\"\nversion = \"0.1.0\"\nedition = \"{edition}\"\n"),
        );
        let mut lib = String::from("//! Generated crate.\n\n");
        for m in 0..modules {
            if m % 2 == 0 {
                let _ = writeln!(lib, "pub mod m{m};");
                write(&dir.join(format!("src/m{m}.rs")), &module(m));
            } else {
                let _ = writeln!(lib, "pub mod d{m};");
                write(
                    &dir.join(format!("src/d{m}/mod.rs")),
                    &format!("{}pub mod inner;\n", module(m)),
                );
                write(&dir.join(format!("src/d{m}/inner.rs")), &module(m + 1000));
            }
        }
        for i in 0..included {
            let _ = writeln!(lib, "include!(\"gen/g{i}.rs\");");
            write(
                &dir.join(format!("src/gen/g{i}.rs")),
                &format!("pub mod g{i} {{\n{}}}\n", module(i + 5000)),
            );
        }
        write(&dir.join("src/lib.rs"), &lib);
        write(
            &dir.join("tests/t.rs"),
            "#[test]\nfn works() {\n    assert_eq!(1 + 1, 2);\n}\n",
        );
    }
    println!("generated {crates} crates under {dir}");
}
