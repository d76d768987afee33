//! The source side's textual prefilter changes what is
//! parsed, never what is found: over the generated fleets, the crate fixture
//! and a crate of every way to reach thiserror's derive, the filtered analysis
//! equals the parse-everything one, file by file.

use std::path::Path;

use crate::support::{RealShape, add_sources, drifted_fleet, real_workspace, write};
use crate::thiserror_src::{fixture, packages};
use xtask::thiserror_src::{AnalyzeOptions, analyze_crate, analyze_crate_with};

/// Each file reaches thiserror's derive in another way; every one of them
/// has a finding when parsed (so a prefilter that clears it fails the test).
const TRICKY: &[(&str, &str)] = &[
    (
        "alias.rs",
        "use thiserror::Error as E;\n#[derive(Debug, E)]\n#[error(\"{r#type}\")]\npub struct A { r#type: u8 }\n",
    ),
    (
        "path.rs",
        "#[derive(Debug, thiserror::Error)]\npub enum B {\n    #[error(\"{0} {}\", .1)]\n    X(u8, u8),\n}\n",
    ),
    (
        "glob.rs",
        "use thiserror::*;\n#[derive(Debug, Error)]\n#[error(\"{r#type}\")]\npub struct G { r#type: u8 }\n",
    ),
    (
        "extern_alias.rs",
        "extern crate thiserror as t2;\n#[derive(Debug, t2::Error)]\n#[error(\"{r#type}\")]\npub struct I { r#type: u8 }\n",
    ),
    (
        "block.rs",
        "pub fn f() {\n    use thiserror::Error;\n    #[derive(Debug, Error)]\n    #[error(\"{r#type}\")]\n    struct J { r#type: u8 }\n}\n",
    ),
    (
        "cfg_attr.rs",
        "use thiserror::Error;\n#[cfg_attr(all(), derive(Debug, Error), error(\"{r#type}\"))]\npub struct K { r#type: u8 }\n",
    ),
    (
        "reexport.rs",
        "#[derive(Debug, helper::Error)]\n#[error /* a comment */ (\"{r#type}\")]\npub struct L { r#type: u8 }\n",
    ),
    (
        "renamed.rs",
        "#[derive(Debug, te::Error)]\n#[error(\"{r#type}\")]\npub struct M { r#type: u8 }\n",
    ),
    (
        "spaced.rs",
        "#[derive(Debug, helper::Error)]\n#[error\n\t(\"{r#type}\")]\npub struct N { r#type: u8 }\n",
    ),
    (
        "macro_made.rs",
        "macro_rules! mk {\n    ($n:ident) => {\n        #[derive(Debug, thiserror::Error)]\n        #[error(\"{r#type}\")]\n        pub struct $n { r#type: u8 }\n    };\n}\nmk!(Made);\n",
    ),
    (
        "macro_items.rs",
        "macro_rules! items {\n    ($($i:item)*) => { $($i)* };\n}\nitems! {\n    #[derive(Debug, thiserror::Error)]\n    #[error(\"{r#type}\")]\n    pub struct In { r#type: u8 }\n}\n",
    ),
];

/// Files the scan never reports on, parsed or not: words in comments and
/// strings only, a derive inside a macro without a helper that could matter.
const INERT: &[(&str, &str)] = &[
    (
        "macro_plain.rs",
        "macro_rules! mk {\n    ($n:ident) => {\n        #[derive(Debug, thiserror::Error)]\n        #[error(\"plain {0}\")]\n        pub struct $n(u8);\n    };\n}\nmk!(Made);\n",
    ),
    (
        "words.rs",
        "// derive Error thiserror error(\npub const S: &str = \"#[derive(Error)] #[error(\\\"x\\\")]\";\n",
    ),
    (
        "std_error.rs",
        "#[derive(Debug)]\npub struct MyError;\nimpl std::fmt::Display for MyError {\n    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result { f.write_str(\"x\") }\n}\nimpl std::error::Error for MyError {}\n",
    ),
];

fn tricky_workspace(root: &Path) {
    write(
        root,
        "Cargo.toml",
        "[workspace]\nresolver = \"2\"\nmembers = [\"t\", \"r\"]\n",
    );
    let mut lib = String::new();
    for (file, text) in TRICKY.iter().chain(INERT) {
        let name = file.trim_end_matches(".rs");
        lib.push_str(&format!("pub mod {name};\n"));
        write(root, &format!("t/src/{file}"), text);
        write(root, &format!("r/src/{file}"), text);
    }
    write(root, "t/src/lib.rs", &lib);
    write(root, "r/src/lib.rs", &lib);
    write(
        root,
        "t/Cargo.toml",
        "[package]\nname = \"t\"\nversion = \"0.1.0\"\nedition = \"2021\"\n\n[dependencies]\nthiserror = \"1\"\n",
    );
    // renamed: `te` is a thiserror name here
    write(
        root,
        "r/Cargo.toml",
        "[package]\nname = \"r\"\nversion = \"0.1.0\"\nedition = \"2021\"\n\n[dependencies]\nte = { package = \"thiserror\", version = \"1\" }\n",
    );
}

/// Compares both analyses of every member; returns (files, files the
/// prefilter clears, findings).
fn compare(root: &Path) -> (usize, usize, usize) {
    let all = AnalyzeOptions {
        parse_all: true,
        ..AnalyzeOptions::default()
    };
    let (mut files, mut cleared, mut findings) = (0, 0, 0);
    for p in packages(root) {
        let filtered = analyze_crate(&p).unwrap();
        let full = analyze_crate_with(&p, &all).unwrap();
        files += full.files.len();
        findings += full.findings.len();
        assert_eq!(full.files.len(), filtered.files.len(), "{}", p.name);
        for (f, g) in full.files.iter().zip(&filtered.files) {
            assert_eq!(f.path, g.path);
            if g.original.is_empty() && !f.original.is_empty() {
                // not parsed: parsing it finds nothing, fixes nothing
                cleared += 1;
                assert!(
                    f.analysis.findings.is_empty() && f.analysis.fixed_text.is_none(),
                    "{}: the prefilter cleared a file with findings",
                    f.path.display()
                );
            } else {
                assert_eq!(f.analysis, g.analysis, "{}", f.path.display());
            }
        }
        assert_eq!(
            (
                &filtered.findings,
                &filtered.missing_dependencies,
                &filtered.unresolved_modules,
                &filtered.exempted
            ),
            (
                &full.findings,
                &full.missing_dependencies,
                &full.unresolved_modules,
                &full.exempted
            ),
            "{}: the prefilter changed what is found",
            p.name
        );
    }
    (files, cleared, findings)
}

#[test]
fn prefilter_is_exact() {
    let dir = tempfile::tempdir().unwrap();
    let base = dir.path().canonicalize().unwrap();

    let tricky = base.join("tricky");
    tricky_workspace(&tricky);
    let (files, cleared, findings) = compare(&tricky);
    assert_eq!(files, 2 * (TRICKY.len() + INERT.len() + 1));
    // every tricky file is reported in both crates (rule 4 aside: both depend on thiserror)
    assert!(findings >= 2 * TRICKY.len(), "{findings}");
    for p in packages(&tricky) {
        let a = analyze_crate(&p).unwrap();
        for (file, _) in TRICKY {
            let hit = a.findings.iter().any(|f| f.path.ends_with(file));
            // `te::Error` is thiserror's only where `te` is the renamed dependency;
            // elsewhere it is a re-export, reported because of its helper
            assert!(hit, "{}: no finding in {file}: {:?}", p.name, a.findings);
        }
        for (file, _) in INERT {
            assert!(!a.findings.iter().any(|f| f.path.ends_with(file)), "{file}");
        }
    }
    assert!(cleared >= 2, "{cleared}");

    let fixture_root = base.join("fixture");
    fixture(&fixture_root);
    let (_, _, findings) = compare(&fixture_root);
    assert!(findings > 0);

    let fleet = drifted_fleet(&base.join("drifted"), 27).unwrap();
    add_sources(&fleet, 27).unwrap();
    let (_, _, findings) = compare(&fleet.root);
    assert!(findings >= 27, "{findings}");

    // the large workspace's shape, scaled down: most files are not parsed
    let shape = RealShape {
        crates: 12,
        modules: 6,
        file_bytes: 3000,
        thiserror_every: 6,
    };
    let real = real_workspace(&base.join("real"), shape).unwrap();
    let (files, cleared, findings) = compare(&real.root);
    assert_eq!(findings, 2, "the two drifted messages");
    assert!(cleared * 10 >= files * 8, "{cleared} of {files} cleared");
}

/// Speed: a crate with a build script but no thiserror
/// build-dependency used to send every file of the crate through the broad
/// test (a `derive` of anything ending in `Error` was parsed); now only the
/// build script's own files are, and arguments that can matter to no rule
/// (`{}` placeholders, no named argument) clear a file. A file the build
/// script shares with the lib (`#[path]`) is still parsed for the build
/// script's rule 4, and the answer is the parse-everything one.
#[test]
fn prefilter_narrows_where_rule_4_cannot_apply() {
    let dir = tempfile::tempdir().unwrap();
    let root = dir.path().canonicalize().unwrap();
    write(
        &root,
        "Cargo.toml",
        "[workspace]\nresolver = \"2\"\nmembers = [\"b\"]\n",
    );
    write(
        &root,
        "b/Cargo.toml",
        "[package]\nname = \"b\"\nversion = \"0.1.0\"\nedition = \"2021\"\nbuild = \"build.rs\"\n\n[dependencies]\nthiserror = \"1\"\n",
    );
    write(
        &root,
        "b/build.rs",
        "#[path = \"src/shared.rs\"]\nmod shared;\nfn main() {}\n",
    );
    write(
        &root,
        "b/src/lib.rs",
        "pub mod plain;\npub mod args;\npub mod shared;\n",
    );
    write(
        &root,
        "b/src/plain.rs",
        "#[derive(Debug, thiserror::Error)]\npub enum P {\n    #[error(\"index {0} out of range\")]\n    A(u8),\n}\n",
    );
    write(
        &root,
        "b/src/args.rs",
        "#[derive(Debug, thiserror::Error)]\n#[error(\"{}: {}\", .path, .source.kind())]\npub struct A { path: String, source: std::io::Error }\n",
    );
    write(
        &root,
        "b/src/shared.rs",
        "#[derive(Debug, thiserror::Error)]\n#[error(\"shared\")]\npub struct S;\n",
    );
    let (files, cleared, findings) = compare(&root);
    assert_eq!((files, findings), (5, 1), "rule 4 for the build script");
    let p = packages(&root).into_iter().next().unwrap();
    let a = analyze_crate(&p).unwrap();
    let parsed: Vec<String> = a
        .files
        .iter()
        .filter(|f| !f.original.is_empty())
        .map(|f| f.path.file_name().unwrap().to_string_lossy().into_owned())
        .collect();
    assert_eq!(parsed, ["shared.rs"], "{cleared} cleared");
    assert_eq!(a.missing_dependencies.len(), 1);
    assert_eq!(a.missing_dependencies[0].table(), "build-dependencies");
}
