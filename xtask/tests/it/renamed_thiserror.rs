//! A fix never makes a crate that compiled stop compiling:
//! a crate that uses thiserror only under another name
//! (`errors = { package = "thiserror", version = "1" }`, `use errors::Error`)
//! cannot move to thiserror 2 by its manifest alone (thiserror 2's derive
//! names `::thiserror`, and cargo refuses a second, direct `thiserror`
//! dependency on the same package), so align-deps leaves that crate
//! untouched, says why, and the workspace builds before and after.

use crate::support::{Fleet, POLICY, align, cargo_check, read};

const ROOT: &str = "[workspace]\nresolver = \"2\"\nmembers = [\"crates/*\"]\n\n[workspace.package]\nversion = \"0.1.0\"\nedition = \"2021\"\n\n[workspace.dependencies]\nthiserror = \"2\"\n";

#[test]
fn a_crate_using_thiserror_only_under_another_name_is_left_untouched() {
    let dir = tempfile::tempdir().unwrap();
    let root = dir.path().canonicalize().unwrap();
    let fleet = Fleet::new(&root, ROOT).unwrap();
    fleet.write("policy/fleet.toml", POLICY).unwrap();
    fleet
        .add_crate(
            "renamed",
            "[dependencies]\nerrors = { package = \"thiserror\", version = \"1\" }\n",
        )
        .unwrap();
    fleet
        .write(
            "crates/renamed/src/lib.rs",
            "use errors::Error;\n\n#[derive(Debug, Error)]\n#[error(\"bad\")]\npub struct Bad;\n",
        )
        .unwrap();
    fleet
        .add_crate("plain", "[dependencies]\nthiserror = \"1.0\"\n")
        .unwrap();
    fleet
        .write(
            "crates/plain/src/lib.rs",
            "#[derive(Debug, thiserror::Error)]\n#[error(\"plain\")]\npub struct Plain;\n",
        )
        .unwrap();
    let target = root.join("target");
    let (ok, err) = cargo_check(&root, &target);
    assert!(ok, "the fixture builds before: {err}");
    let manifest = read(&fleet.manifest("renamed"));
    let lib = read(&root.join("crates/renamed/src/lib.rs"));

    let (code, out, err) = align(&root, &[]);
    assert_eq!(code, 1, "a person must rename it: {out}{err}");
    assert!(out.contains("renamed"), "{out}");
    assert!(out.contains("left untouched"), "{out}");
    assert_eq!(
        read(&fleet.manifest("renamed")),
        manifest,
        "manifest untouched"
    );
    assert_eq!(read(&root.join("crates/renamed/src/lib.rs")), lib);
    assert!(
        read(&fleet.manifest("plain")).contains("thiserror = { workspace = true }"),
        "the other crate still moves"
    );
    let (ok, err) = cargo_check(&root, &target);
    assert!(ok, "the fixture builds after the fix: {err}");
}
