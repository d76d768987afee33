//! What the integration test modules share, and what
//! `examples/gen_fleet.rs` includes with `#[path]`: running xtask in-process,
//! file-tree helpers, `cargo check` of a fixture, and the drifted fixture
//! fleets of align-deps ([`drifted_fleet`], [`add_sources`]).
// each includer uses a part of it
#![allow(dead_code)]

use std::collections::BTreeMap;
use std::io;
use std::os::unix::fs::PermissionsExt as _;
use std::path::{Path, PathBuf};
use std::time::SystemTime;

// ---- running xtask -------------------------------------------------------------------------

/// Runs `cargo xtask <args>` in-process; returns (exit code, stdout, stderr).
pub fn xtask(args: &[&str]) -> (i32, String, String) {
    let (mut out, mut err) = (Vec::new(), Vec::new());
    let code = xtask::cli::run(args.iter().copied(), &mut out, &mut err);
    (
        code,
        String::from_utf8(out).unwrap(),
        String::from_utf8(err).unwrap(),
    )
}

/// Runs `cargo xtask align-deps --workspace <root> <extra>`; returns (exit code, stdout, stderr).
pub fn align(root: &Path, extra: &[&str]) -> (i32, String, String) {
    let mut args = vec!["align-deps", "--workspace", root.to_str().unwrap()];
    args.extend_from_slice(extra);
    xtask(&args)
}

// ---- file trees ----------------------------------------------------------------------------

/// `p` relative to `root`, `/`-separated.
pub fn rel_to(root: &Path, p: &Path) -> String {
    let r = p.strip_prefix(root).unwrap();
    r.components()
        .map(|c| c.as_os_str().to_string_lossy())
        .collect::<Vec<_>>()
        .join("/")
}

pub fn read(p: &Path) -> String {
    std::fs::read_to_string(p).unwrap()
}

/// Writes `text` at `root/rel`, creating directories.
pub fn write(root: &Path, rel: &str, text: &str) {
    let p = root.join(rel);
    std::fs::create_dir_all(p.parent().unwrap()).unwrap();
    std::fs::write(p, text).unwrap();
}

/// Every file under a root (but `target/`): its bytes, mtime and mode.
pub type Snapshot = BTreeMap<PathBuf, (Vec<u8>, SystemTime, u32)>;

/// The [`Snapshot`] of `root`.
pub fn snapshot(root: &Path) -> Snapshot {
    let mut out = BTreeMap::new();
    let mut stack = vec![root.to_path_buf()];
    while let Some(d) = stack.pop() {
        for e in std::fs::read_dir(&d).unwrap() {
            let e = e.unwrap();
            let md = e.metadata().unwrap();
            if md.is_dir() {
                if e.file_name() != "target" {
                    stack.push(e.path());
                }
            } else {
                out.insert(
                    e.path(),
                    (
                        std::fs::read(e.path()).unwrap(),
                        md.modified().unwrap(),
                        md.permissions().mode(),
                    ),
                );
            }
        }
    }
    out
}

// ---- cargo ---------------------------------------------------------------------------------

/// `cargo check --workspace --all-targets --offline` (online again only when
/// the offline resolution lacks a package); returns (success, stderr).
pub fn cargo_check(root: &Path, target: &Path) -> (bool, String) {
    let run = |offline: bool| {
        let mut cmd = xtask::workspace::cargo_command();
        cmd.current_dir(root).env("CARGO_TARGET_DIR", target).args([
            "check",
            "--workspace",
            "--all-targets",
            "--keep-going",
            "--quiet",
            "--color",
            "never",
        ]);
        if offline {
            cmd.arg("--offline");
        }
        // a time limit: a hung cargo fails the test instead of hanging the run
        let out = xtask::child::output(&mut cmd, xtask::child::Kind::Build, "cargo", None).unwrap();
        (
            out.status.success(),
            String::from_utf8_lossy(&out.stderr).into_owned(),
        )
    };
    let (ok, err) = run(true);
    // offline resolution can fail when the registry cache lacks a package: retry online
    if !ok
        && (err.contains("offline")
            || err.contains("failed to select")
            || err.contains("failed to download"))
    {
        return run(false);
    }
    (ok, err)
}

// ---- drifted fixture fleets (align-deps; `examples/gen_fleet.rs` for timing) ---------------

/// The fleet policy of the fixtures: thiserror 2, inherited.
pub const POLICY: &str = "[dependencies.thiserror]\nversion = \"2\"\ninherit = true\n";

/// The root manifest of [`drifted_fleet`]: the field case, where the
/// workspace already says thiserror 2 but members declare 1.x themselves.
pub const DRIFTED_ROOT: &str = "\
[workspace]
resolver = \"2\"
members = [\"crates/*\"]
exclude = [\"vendor/old-errors\"]

[workspace.package]
version = \"0.1.0\"
edition = \"2021\"

[workspace.dependencies]
# errors: the fleet moved to thiserror 2
thiserror = \"2\"
anyhow = \"1\"
";

/// How many declaration forms [`drift_body`] cycles through.
pub const DRIFT_FORMS: usize = 9;

/// The dependency section of crate `i` of [`drifted_fleet`]: form `i % DRIFT_FORMS`,
/// covering every table kind and declaration form (the last is already inherited).
pub fn drift_body(i: usize) -> &'static str {
    match i % DRIFT_FORMS {
        0 => "[dependencies]\nanyhow = { workspace = true }\nthiserror = \"1.0\"\n",
        1 => {
            "[dependencies]\n# errors, one enum per crate\nthiserror = { version = \"1.0\", features = [\"std\"] } # keep std\n"
        }
        2 => "[dev-dependencies]\nthiserror = '1.0.40'\n",
        3 => "[build-dependencies]\nthiserror.version = \"1\"\n",
        4 => {
            "[target.'cfg(unix)'.dependencies]\nthiserror = { version = \"1.0\", optional = true }\n\n[features]\nerrors = [\"dep:thiserror\"]\n"
        }
        5 => "[target.x86_64-unknown-linux-gnu.dev-dependencies]\nthiserror = \"1\"\n",
        6 => "[dependencies.thiserror]\nversion = \"1.0.50\"\nfeatures = [\"std\"]\n",
        7 => "[dependencies]\nerrors = { package = \"thiserror\", version = \"1.0\" }\n",
        _ => "[dependencies]\nthiserror.workspace = true\n",
    }
}

/// `[package]` of a fixture crate (inheriting version and edition).
pub fn package_header(name: &str) -> String {
    format!(
        "[package]\nname = \"{name}\"\nversion.workspace = true\nedition.workspace = true\npublish = false\n"
    )
}

/// A fixture workspace on disk.
#[derive(Debug, Clone)]
pub struct Fleet {
    /// The workspace root.
    pub root: PathBuf,
}

impl Fleet {
    /// Writes `root_manifest` as `root/Cargo.toml` and [`POLICY`] as `root/policy/fleet.toml`.
    ///
    /// # Errors
    /// I/O errors.
    pub fn new(root: &Path, root_manifest: &str) -> io::Result<Fleet> {
        let fleet = Fleet {
            root: root.to_path_buf(),
        };
        fleet.write("Cargo.toml", root_manifest)?;
        fleet.write("policy/fleet.toml", POLICY)?;
        Ok(fleet)
    }

    /// Writes `text` at `rel` (creating directories); returns the path.
    ///
    /// # Errors
    /// I/O errors.
    pub fn write(&self, rel: &str, text: &str) -> io::Result<PathBuf> {
        let p = self.root.join(rel);
        if let Some(d) = p.parent() {
            std::fs::create_dir_all(d)?;
        }
        std::fs::write(&p, text)?;
        Ok(p)
    }

    /// Writes crate `crates/<name>` with [`package_header`] followed by `body`
    /// and an empty `src/lib.rs`; returns its manifest path.
    ///
    /// # Errors
    /// I/O errors.
    pub fn add_crate(&self, name: &str, body: &str) -> io::Result<PathBuf> {
        self.write(&format!("crates/{name}/src/lib.rs"), "")?;
        self.write(
            &format!("crates/{name}/Cargo.toml"),
            &format!("{}\n{body}", package_header(name)),
        )
    }

    /// The manifest path of crate `name`.
    pub fn manifest(&self, name: &str) -> PathBuf {
        self.root.join("crates").join(name).join("Cargo.toml")
    }
}

/// The name of crate `i` of a generated fleet.
pub fn crate_name(i: usize) -> String {
    format!("c{i:04}")
}

/// The field case at scale: [`DRIFTED_ROOT`] plus `n` crates `c0000..`, crate
/// `i` declaring thiserror with [`drift_body`]`(i)`; a vendored crate outside
/// the workspace (`vendor/old-errors`, excluded, on thiserror 1) and a
/// `Cargo.lock` in which that crate still pulls thiserror 1.
///
/// # Errors
/// I/O errors.
pub fn drifted_fleet(root: &Path, n: usize) -> io::Result<Fleet> {
    let fleet = Fleet::new(root, DRIFTED_ROOT)?;
    for i in 0..n {
        fleet.add_crate(&crate_name(i), drift_body(i))?;
    }
    fleet.write(
        "vendor/old-errors/Cargo.toml",
        "[package]\nname = \"old-errors\"\nversion = \"0.3.0\"\nedition = \"2021\"\n\n[dependencies]\nthiserror = \"1.0\"\n",
    )?;
    fleet.write("vendor/old-errors/src/lib.rs", "")?;
    let mut lock = String::from(
        "# This file is automatically @generated by Cargo.\n# It is not intended for manual editing.\nversion = 4\n",
    );
    for i in 0..n {
        let deps = if i == 0 {
            "\"old-errors\", \"thiserror 1.0.69\""
        } else {
            "\"thiserror 1.0.69\""
        };
        lock.push_str(&format!(
            "\n[[package]]\nname = \"{}\"\nversion = \"0.1.0\"\ndependencies = [{deps}]\n",
            crate_name(i)
        ));
    }
    lock.push_str(
        "\n[[package]]\nname = \"old-errors\"\nversion = \"0.3.0\"\nsource = \"registry+https://github.com/rust-lang/crates.io-index\"\ndependencies = [\"thiserror 1.0.69\"]\n\
         \n[[package]]\nname = \"thiserror\"\nversion = \"1.0.69\"\nsource = \"registry+https://github.com/rust-lang/crates.io-index\"\n\
         \n[[package]]\nname = \"thiserror\"\nversion = \"2.0.12\"\nsource = \"registry+https://github.com/rust-lang/crates.io-index\"\n",
    );
    fleet.write("Cargo.lock", &lock)?;
    Ok(fleet)
}

/// The `src/lib.rs` of crate `i` in a fleet with sources ([`add_sources`]):
/// about 60 lines of error types in thiserror 1 style, with a module file.
/// Every third crate uses `{r#type}` (rule 1) and every fifth `{0}` with an
/// extra positional argument (rule 3); the rest is already thiserror 2 code.
pub fn source_lib(i: usize) -> String {
    let raw = if i.is_multiple_of(3) { "r#" } else { "" };
    let rule3 = if i.is_multiple_of(5) {
        "#[error(\"{0} (code {})\", .1)]"
    } else {
        "#[error(\"{0} (code {code})\", code = .1)]"
    };
    format!(
        r#"//! Errors of crate {i}.
use thiserror::Error;

pub mod detail;

/// What can go wrong.
#[derive(Debug, Error)]
pub enum Error{i} {{
    #[error("unknown type {{{raw}type}}")]
    UnknownType {{ r#type: String }},
    #[error("io: {{0}}")]
    Io(#[from] std::io::Error),
    {rule3}
    Coded(String, u32),
    #[error("parse error at {{line}}:{{column}}: {{message}}")]
    Parse {{
        line: usize,
        column: usize,
        message: String,
    }},
    #[error(transparent)]
    Detail(#[from] detail::DetailError),
}}

/// A plain type with look-alikes: `{{r#type}}`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Record {{
    pub r#type: String,
    pub size: usize,
}}

impl Record {{
    pub fn describe(&self) -> String {{
        format!("{{}} ({{}} bytes) {{{{r#type}}}}", self.r#type, self.size)
    }}
}}

pub fn check(r: &Record) -> Result<(), Error{i}> {{
    if r.size == 0 {{
        return Err(Error{i}::Coded(r.r#type.clone(), 1));
    }}
    if r.r#type.is_empty() {{
        return Err(Error{i}::UnknownType {{ r#type: String::new() }});
    }}
    Ok(())
}}
"#
    )
}

/// `src/detail.rs` of a fleet crate with sources.
pub const SOURCE_DETAIL: &str = r#"//! Details.
#[derive(Debug, thiserror::Error)]
#[error("detail {kind:?}: {message}")]
pub struct DetailError {
    pub kind: u8,
    pub message: String,
}

pub fn detail(kind: u8) -> DetailError {
    DetailError {
        kind,
        message: format!("kind {kind}"),
    }
}
"#;

/// Gives each of the `n` crates of `fleet` the sources of [`source_lib`]
/// (`src/lib.rs` and `src/detail.rs`), for timing the source side.
///
/// # Errors
/// I/O errors.
pub fn add_sources(fleet: &Fleet, n: usize) -> io::Result<()> {
    for i in 0..n {
        let name = crate_name(i);
        fleet.write(&format!("crates/{name}/src/lib.rs"), &source_lib(i))?;
        fleet.write(&format!("crates/{name}/src/detail.rs"), SOURCE_DETAIL)?;
    }
    Ok(())
}

// ---- a large real workspace ----------------------------------------------------

/// The shape of [`real_workspace`].
#[derive(Debug, Clone, Copy)]
pub struct RealShape {
    /// Member crates.
    pub crates: usize,
    /// Module files per crate (besides `lib.rs` and, in thiserror crates, `error.rs`).
    pub modules: usize,
    /// Approximate size of a module file in bytes.
    pub file_bytes: usize,
    /// Every `thiserror_every`-th crate uses thiserror.
    pub thiserror_every: usize,
}

impl RealShape {
    /// The "large real workspace" the timings use: 80 crates, about 1,300 files of
    /// about 20 KB (26 MB), a sixth of the crates using thiserror.
    pub const LARGE: RealShape = RealShape {
        crates: 80,
        modules: 15,
        file_bytes: 20_000,
        thiserror_every: 6,
    };
}

/// One module of ordinary Rust (no thiserror): derives, `Error` types with
/// hand-written `Display`/`std::error::Error` impls, `Result<_, Error>`,
/// logging macros, matches and iterator chains, doc comments; about `bytes`
/// long.
pub fn real_module(seed: usize, bytes: usize) -> String {
    let mut s = format!(
        "//! Module {seed}: generated to look like the code of a large workspace.\n\n\
         use std::collections::{{BTreeMap, HashMap}};\nuse std::fmt;\n\n\
         /// What can go wrong in module {seed}.\n#[derive(Debug, Clone, PartialEq, Eq)]\n\
         pub enum Error {{\n    Missing(String),\n    Invalid {{ at: usize, why: String }},\n}}\n\n\
         impl fmt::Display for Error {{\n    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {{\n\
         \x20       match self {{\n            Error::Missing(k) => write!(f, \"missing {{k}}\"),\n\
         \x20           Error::Invalid {{ at, why }} => write!(f, \"invalid at {{at}}: {{why}}\"),\n\
         \x20       }}\n    }}\n}}\n\nimpl std::error::Error for Error {{}}\n\n\
         pub type Result<T, E = Error> = std::result::Result<T, E>;\n\n"
    );
    let mut k = 0;
    while s.len() < bytes {
        s.push_str(&format!(
            r#"/// Record {k} of module {seed}, with its index.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct Record{k} {{
    pub name: String,
    pub values: Vec<u64>,
    pub index: BTreeMap<String, usize>,
    pub tags: HashMap<u32, Vec<String>>,
}}

impl Record{k} {{
    /// Sums the values above `floor`, saturating.
    pub fn total(&self, floor: u64) -> u64 {{
        self.values
            .iter()
            .filter(|v| **v > floor)
            .fold(0u64, |acc, v| acc.saturating_add(*v))
    }}

    /// Looks `key` up, or says what is missing.
    pub fn lookup(&self, key: &str) -> Result<usize> {{
        match self.index.get(key) {{
            Some(&i) if i < self.values.len() => Ok(i),
            Some(&i) => Err(Error::Invalid {{
                at: i,
                why: format!("index {{i}} past {{}} values", self.values.len()),
            }}),
            None => {{
                log::error!("record {k}: no key {{key}}");
                Err(Error::Missing(key.to_string()))
            }}
        }}
    }}

    pub fn describe(&self) -> String {{
        let tags: Vec<String> = self.tags.values().flatten().cloned().collect();
        match self.values.len() {{
            0 => format!("{{}}: empty", self.name),
            1 => format!("{{}}: one value ({{}}); tags {{tags:?}}", self.name, self.values[0]),
            n => format!("{{}}: {{n}} values, total {{}}", self.name, self.total({seed})),
        }}
    }}
}}

"#
        ));
        k += 1;
    }
    s
}

/// The `error.rs` of a thiserror crate: `variants` variants with
/// `#[error("...")]` messages in the styles real code uses; with `drift`,
/// one message uses `{{r#type}}` (rule 1) and one `{{0}}` with an extra
/// positional argument (rule 3).
pub fn real_error_module(seed: usize, variants: usize, drift: bool) -> String {
    let mut s = format!(
        "//! Errors of crate {seed}.\n\nuse thiserror::Error;\n\n/// Everything that fails here.\n#[derive(Debug, Error)]\npub enum Error {{\n"
    );
    for v in 0..variants {
        let line = match v % 5 {
            0 => {
                format!("    #[error(\"cannot open {{path}}\")]\n    Open{v} {{ path: String }},\n")
            }
            1 => format!("    #[error(\"io error\")]\n    Io{v}(#[source] std::io::Error),\n"),
            2 => {
                format!("    #[error(\"bad value {{0}} (at {{1}})\")]\n    Value{v}(u64, usize),\n")
            }
            3 => format!(
                "    #[error(transparent)]\n    Other{v}(Box<dyn std::error::Error + Send + Sync>),\n"
            ),
            _ => format!(
                "    #[error(\"{{kind}}: {{message}}\", kind = \"kind\")]\n    Kind{v} {{ message: String }},\n"
            ),
        };
        s.push_str(&line);
    }
    if drift {
        s.push_str(
            "    #[error(\"unknown type {r#type}\")]\n    UnknownType { r#type: String },\n",
        );
        s.push_str("    #[error(\"{0} (code {})\", .1)]\n    Coded(String, u32),\n");
    }
    s.push_str("}\n");
    s
}

/// A workspace shaped like [`RealShape`]: `crates/k{i}` each with `lib.rs`
/// declaring `modules` modules of [`real_module`]; every
/// `thiserror_every`-th crate also has `error.rs` ([`real_error_module`],
/// 60 variants; the first one also has two drifted messages) and inherits `thiserror` from the
/// root, which still asks for `"1.0"`; [`POLICY`] asks for 2.
///
/// # Errors
/// I/O errors.
pub fn real_workspace(root: &Path, shape: RealShape) -> io::Result<Fleet> {
    let members: Vec<String> = (0..shape.crates)
        .map(|c| format!("\"crates/k{c}\""))
        .collect();
    let fleet = Fleet::new(
        root,
        &format!(
            "[workspace]\nresolver = \"2\"\nmembers = [{}]\n\n[workspace.package]\nversion = \"0.1.0\"\nedition = \"2021\"\n\n[workspace.dependencies]\nthiserror = \"1.0\"\nlog = \"0.4\"\n",
            members.join(", ")
        ),
    )?;
    let mut drifted = 0;
    for c in 0..shape.crates {
        let dir = format!("crates/k{c}");
        let uses = c.is_multiple_of(shape.thiserror_every.max(1));
        let mut deps = String::from("[dependencies]\nlog = { workspace = true }\n");
        let mut lib = format!("//! Crate {c}.\n\n");
        if uses {
            deps.push_str("thiserror = { workspace = true }\n");
            lib.push_str("pub mod error;\n");
            let drift = drifted < 1;
            drifted += usize::from(drift);
            fleet.write(
                &format!("{dir}/src/error.rs"),
                &real_error_module(c, 60, drift),
            )?;
        }
        for m in 0..shape.modules {
            lib.push_str(&format!("pub mod m{m};\n"));
            fleet.write(
                &format!("{dir}/src/m{m}.rs"),
                &real_module(c * 1000 + m, shape.file_bytes),
            )?;
        }
        fleet.write(&format!("{dir}/src/lib.rs"), &lib)?;
        fleet.write(
            &format!("{dir}/Cargo.toml"),
            &format!("{}\n{deps}", package_header(&format!("k{c}"))),
        )?;
    }
    Ok(fleet)
}

/// `cmd`'s output, the command killed (and the test failed) past the tool
/// limit (`XTASK_TOOL_TIMEOUT`, five minutes by default).
pub fn output_within(cmd: &mut std::process::Command) -> std::process::Output {
    xtask::child::output(cmd, xtask::child::Kind::Tool, "a test's command", None).unwrap()
}

/// [`output_within`] under a build's limit (a command that compiles).
pub fn build_within(cmd: &mut std::process::Command) -> std::process::Output {
    xtask::child::output(cmd, xtask::child::Kind::Build, "a test's build", None).unwrap()
}
