//! A policy mistake is an error, not a silent pass: exit 2
//! at policy:line:column, nothing written.

use crate::support::{align, drifted_fleet, snapshot};

fn case(policy: &str, at: &str, says: &str) {
    let dir = tempfile::tempdir().unwrap();
    let root = dir.path().canonicalize().unwrap();
    let fleet = drifted_fleet(&root, 9).unwrap();
    fleet.write("policy/fleet.toml", policy).unwrap();
    let before = snapshot(&root);
    for extra in [&["--check"][..], &[][..]] {
        let (code, out, err) = align(&root, extra);
        assert_eq!(code, 2, "{policy:?} {extra:?}: {out}{err}");
        let want = format!("{}:{at}: ", root.join("policy/fleet.toml").display());
        assert!(err.contains(&want), "{policy:?}: wanted {want}: {err}");
        assert!(err.contains(says), "{policy:?}: {err}");
        assert_eq!(snapshot(&root), before, "{policy:?}: nothing written");
    }
}

#[test]
fn a_rule_for_a_package_nobody_declares_is_an_error() {
    case(
        "[dependencies.thiserorr]\nversion = \"2\"\n",
        "1:15",
        "no manifest of the workspace declares the package `thiserorr` (did you mean `thiserror`?)",
    );
}

#[test]
fn an_empty_policy_is_an_error() {
    case("# to do\n\n", "1:1", "the policy is empty");
    case(
        "[fmt]\nexclude = []\n",
        "1:1",
        "no [dependencies.<name>] rule",
    );
}

#[test]
fn an_unsatisfiable_requirement_is_an_error() {
    case(
        "[dependencies.thiserror]\nversion = \">=2, <1\"\n",
        "2:11",
        "satisfied by no version",
    );
}

#[test]
fn a_requirement_with_stray_spaces_is_an_error() {
    case(
        "[dependencies.thiserror]\nversion = \" 2 \"\n",
        "2:12",
        "has stray spaces",
    );
    case(
        "[dependencies.thiserror]\nversion = \">=2,  <3\"\n",
        "2:17",
        "write \">=2, <3\"",
    );
}
