//! The `rtx-train` command line, run as a user runs it: JSON lines, exit
//! codes, checkpoints, resumption, predictions and Ctrl-C.

use std::io::{BufRead, BufReader};
use std::path::Path;
use std::process::{Command, Output, Stdio};

use serde_json::Value;

fn bin() -> Command {
    Command::new(env!("CARGO_BIN_EXE_rtx-train"))
}

fn run(args: &[&str], dir: &Path) -> Output {
    bin().args(args).current_dir(dir).output().unwrap()
}

fn json_lines(out: &Output) -> Vec<Value> {
    String::from_utf8_lossy(&out.stdout)
        .lines()
        .map(|l| serde_json::from_str(l).unwrap_or_else(|e| panic!("not JSON: {l:?}: {e}")))
        .collect()
}

fn stderr(out: &Output) -> String {
    String::from_utf8_lossy(&out.stderr).into_owned()
}

/// Small, fast settings for the built-in dataset.
const FAST: [&str; 6] = ["--heads", "2", "--channels", "4", "--seed", "3"];

#[test]
fn json_format_prints_one_object_per_epoch_then_the_end() {
    let dir = tempfile::tempdir().unwrap();
    let out = run(
        &[&FAST[..], &["--epochs", "3", "--format", "json"]].concat(),
        dir.path(),
    );
    assert!(out.status.success(), "{}", stderr(&out));
    let lines = json_lines(&out);
    assert_eq!(lines.len(), 4, "{lines:?}");
    for (i, l) in lines[..3].iter().enumerate() {
        assert_eq!(l["event"], "epoch");
        assert_eq!(l["epoch"], i);
        assert!(l["train_loss"].as_f64().unwrap().is_finite());
        let acc = l["val"]["accuracy"].as_f64().unwrap();
        assert!((0.0..=1.0).contains(&acc));
        assert!(l["test"]["macro_f1"].as_f64().is_some());
    }
    assert_eq!(lines[3]["event"], "done");
    assert_eq!(lines[3]["epochs"], 3);
    // the reference products (CUDA's bits) train too, to nearly the same losses
    let exact = run(
        &[
            &FAST[..],
            &[
                "--epochs",
                "3",
                "--format",
                "json",
                "--backend",
                "cpu-exact",
            ],
        ]
        .concat(),
        dir.path(),
    );
    assert!(exact.status.success(), "{}", stderr(&exact));
    let e = json_lines(&exact);
    let (a, b) = (
        lines[2]["train_loss"].as_f64().unwrap(),
        e[2]["train_loss"].as_f64().unwrap(),
    );
    assert!((a - b).abs() <= 1e-4 * a.abs(), "{a} vs {b}");
}

#[test]
fn human_format_prints_a_line_per_epoch_and_a_metric() {
    let dir = tempfile::tempdir().unwrap();
    let out = run(&[&FAST[..], &["--epochs", "2"]].concat(), dir.path());
    assert!(out.status.success(), "{}", stderr(&out));
    let text = String::from_utf8_lossy(&out.stdout);
    assert!(text.contains("epoch   1/2"), "{text}");
    assert!(
        text.contains("val loss") && text.contains("accuracy"),
        "{text}"
    );
    assert!(
        text.lines().last().unwrap().starts_with("done: 2 epochs"),
        "{text}"
    );
}

#[test]
fn bad_input_exits_2_naming_what_is_wrong() {
    let dir = tempfile::tempdir().unwrap();
    let empty = dir.path().join("empty.safetensors");
    std::fs::write(&empty, b"").unwrap();
    let cases: Vec<(Vec<String>, &str)> = vec![
        (
            vec!["--data".into(), empty.display().to_string()],
            "empty.safetensors",
        ),
        (
            vec!["--data".into(), "no-such-file.safetensors".into()],
            "no-such-file",
        ),
        (vec!["--target".into(), "nosuch".into()], "nosuch"),
        (vec!["--task".into(), "regress".into()], "class labels"),
        (vec!["--lr=-1".into()], "lr"),
        (vec!["--schedule".into(), "linear".into()], "schedule"),
        (vec!["--backend".into(), "cuda".into()], "cuda"),
        (vec!["--momentum".into(), "0.9".into()], "--optimizer sgd"),
        (vec!["--dropout".into(), "1.5".into()], "dropout"),
        (
            vec!["--planted".into(), "mag:16".into()],
            "mag:DIV:HOMOPHILY",
        ),
        (
            vec!["--planted".into(), "mag:16:1.5:0.3".into()],
            "homophily",
        ),
        (
            vec!["--planted".into(), "harris".into()],
            "harris:BATCH[:SEED]",
        ),
        (vec!["--planted".into(), "harris:0".into()], "BATCH \"0\""),
        (
            vec!["--planted".into(), "harris:two".into()],
            "BATCH \"two\"",
        ),
        (
            vec!["--planted".into(), "harris:1:-3".into()],
            "SEED \"-3\"",
        ),
        (vec!["--planted".into(), "harris:1:2:3".into()], "4 fields"),
        (
            vec!["--planted".into(), "harris:999999999".into()],
            "batch 999999999",
        ),
        (
            vec!["--features-only".into(), "--target".into(), "x".into()],
            "x",
        ),
    ];
    for (args, needle) in cases {
        if args[0] == "--backend" && cfg!(feature = "cuda") {
            continue;
        }
        let out = run(
            &args.iter().map(String::as_str).collect::<Vec<_>>(),
            dir.path(),
        );
        assert_eq!(out.status.code(), Some(2), "{args:?}: {}", stderr(&out));
        let e = stderr(&out);
        assert!(
            e.contains("rtx-train: error:") && e.contains(needle),
            "{args:?}: {e}"
        );
    }
    // clap's own usage errors are exit 2 as well
    let out = run(&["--epochs", "many"], dir.path());
    assert_eq!(out.status.code(), Some(2));
}

#[test]
fn resume_refuses_run_settings_and_continues_the_run() {
    let dir = tempfile::tempdir().unwrap();
    let d = dir.path();
    // 4 epochs straight
    let whole = run(
        &[
            &FAST[..],
            &[
                "--epochs",
                "4",
                "--format",
                "json",
                "--save",
                "whole.safetensors",
            ],
        ]
        .concat(),
        d,
    );
    assert!(whole.status.success(), "{}", stderr(&whole));
    // 2, then resume to 4
    let first = run(
        &[
            &FAST[..],
            &[
                "--epochs",
                "2",
                "--format",
                "json",
                "--save",
                "part.safetensors",
            ],
        ]
        .concat(),
        d,
    );
    assert!(first.status.success(), "{}", stderr(&first));
    assert!(d.join("part.best.safetensors").exists());
    let bad = run(&["--resume", "part.safetensors", "--lr", "0.1"], d);
    assert_eq!(bad.status.code(), Some(2));
    assert!(
        stderr(&bad).contains("--lr cannot be given with --resume"),
        "{}",
        stderr(&bad)
    );
    let rest = run(
        &[
            "--resume",
            "part.safetensors",
            "--epochs",
            "4",
            "--format",
            "json",
            "--save",
            "part.safetensors",
        ],
        d,
    );
    assert!(rest.status.success(), "{}", stderr(&rest));
    let w = json_lines(&whole);
    let r = json_lines(&rest);
    assert_eq!(r.len(), 3, "{r:?}");
    for e in 0..2 {
        assert_eq!(
            w[2 + e]["train_loss"],
            r[e]["train_loss"],
            "epoch {}",
            2 + e
        );
        assert_eq!(w[2 + e]["val"], r[e]["val"]);
    }
    let a = std::fs::read(d.join("whole.safetensors")).unwrap();
    let b = std::fs::read(d.join("part.safetensors")).unwrap();
    let (sa, sb) = (
        safetensors::SafeTensors::deserialize(&a).unwrap(),
        safetensors::SafeTensors::deserialize(&b).unwrap(),
    );
    let mut names = sa.names();
    names.sort();
    for n in names {
        assert_eq!(
            sa.tensor(n).unwrap().data(),
            sb.tensor(n).unwrap().data(),
            "{n}"
        );
    }
}

#[test]
fn predict_writes_every_target_nodes_logits_and_class() {
    let dir = tempfile::tempdir().unwrap();
    let out = run(
        &[
            &FAST[..],
            &[
                "--epochs",
                "1",
                "--predict",
                "p.safetensors",
                "--format",
                "json",
            ],
        ]
        .concat(),
        dir.path(),
    );
    assert!(out.status.success(), "{}", stderr(&out));
    let bytes = std::fs::read(dir.path().join("p.safetensors")).unwrap();
    let st = safetensors::SafeTensors::deserialize(&bytes).unwrap();
    let logits = st.tensor("paper.out").unwrap();
    let pred = st.tensor("paper.pred").unwrap();
    let (n, c) = (logits.shape()[0], logits.shape()[1]);
    assert_eq!(pred.shape(), [n]);
    let l: Vec<f32> = logits
        .data()
        .chunks(4)
        .map(|b| f32::from_le_bytes(b.try_into().unwrap()))
        .collect();
    let p: Vec<i64> = pred
        .data()
        .chunks(8)
        .map(|b| i64::from_le_bytes(b.try_into().unwrap()))
        .collect();
    for i in 0..n {
        let row = &l[i * c..(i + 1) * c];
        let best = (0..c).fold(0, |m, j| if row[j] > row[m] { j } else { m });
        assert_eq!(p[i], best as i64, "node {i}");
    }
}

#[test]
fn ctrl_c_finishes_the_step_writes_a_checkpoint_and_exits_130() {
    let dir = tempfile::tempdir().unwrap();
    let d = dir.path();
    let mut child = bin()
        .args(
            [
                &FAST[..],
                &[
                    "--epochs",
                    "100000",
                    "--format",
                    "json",
                    "--save",
                    "ck.safetensors",
                ],
            ]
            .concat(),
        )
        .current_dir(d)
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    // wait for the first epoch, then interrupt
    let mut lines = BufReader::new(child.stdout.take().unwrap()).lines();
    let first = lines.next().unwrap().unwrap();
    assert!(first.contains("\"epoch\""), "{first}");
    // SAFETY: kill(2) on our own child's pid with SIGINT.
    assert_eq!(unsafe { libc::kill(child.id() as i32, libc::SIGINT) }, 0);
    // a watchdog: a run the signal did not stop is killed within 120 s
    // (the test then fails on its exit status), and stands down once the
    // child has exited, before it is reaped
    let pid = child.id() as i32;
    let (done, stood_down) = std::sync::mpsc::channel::<()>();
    let watchdog = std::thread::spawn(move || {
        if stood_down
            .recv_timeout(std::time::Duration::from_secs(120))
            .is_err()
        {
            // SAFETY: kill(2) on our child's pid, not yet reaped.
            unsafe { libc::kill(pid, libc::SIGKILL) };
        }
    });
    let rest: Vec<String> = lines.map(Result::unwrap).collect();
    done.send(()).unwrap();
    watchdog.join().unwrap();
    let status = child.wait().unwrap();
    assert_eq!(status.code(), Some(130), "{rest:?}");
    let last: Value = serde_json::from_str(rest.last().unwrap()).unwrap();
    assert_eq!(last["event"], "interrupted");
    assert_eq!(last["checkpoint"], "ck.safetensors");
    // the checkpoint resumes
    let epochs = last["epoch"].as_u64().unwrap() + 1;
    let out = run(
        &[
            "--resume",
            "ck.safetensors",
            "--epochs",
            &epochs.to_string(),
            "--format",
            "json",
        ],
        d,
    );
    assert!(out.status.success(), "{}", stderr(&out));
    assert_eq!(json_lines(&out).last().unwrap()["event"], "done");
}

/// The epoch's `loss_hash` (JSON) and `(hash ...)` (the human line): 16
/// hex digits, the same in two runs of a seed, others with another seed,
/// full-graph and sampled.
#[test]
fn the_loss_hash_repeats_with_the_seed_and_changes_with_another() {
    let dir = tempfile::tempdir().unwrap();
    let hashes = |seed: &str, extra: &[&str], format: &str| -> Vec<String> {
        let out = run(
            &[
                &["--heads", "2", "--channels", "4", "--epochs", "2"][..],
                &["--seed", seed, "--format", format],
                extra,
            ]
            .concat(),
            dir.path(),
        );
        assert!(out.status.success(), "{}", stderr(&out));
        if format == "json" {
            json_lines(&out)[..2]
                .iter()
                .map(|l| l["loss_hash"].as_str().unwrap().to_string())
                .collect()
        } else {
            String::from_utf8_lossy(&out.stdout)
                .lines()
                .filter_map(|l| l.split_once("(hash ").map(|(_, r)| r[..16].to_string()))
                .collect()
        }
    };
    for extra in [&[][..], &["--batch", "400", "--fanouts", "4,3"]] {
        let a = hashes("3", extra, "json");
        assert_eq!(a.len(), 2);
        for h in &a {
            assert!(
                h.len() == 16 && h.bytes().all(|c| c.is_ascii_hexdigit()),
                "{h}"
            );
        }
        assert_ne!(a[0], a[1], "{extra:?}");
        assert_eq!(a, hashes("3", extra, "json"), "{extra:?}: a second run");
        assert_eq!(a, hashes("3", extra, "human"), "{extra:?}: the human line");
        let b = hashes("4", extra, "json");
        assert!(a[0] != b[0] && a[1] != b[1], "{extra:?}: {a:?} vs {b:?}");
    }
}

/// `--planted harris:BATCH:SEED` generates the Harris-shaped regression,
/// `--export-data` writes it and `--data` trains on the file with the same
/// bits (loss hash and scores); the features-only baseline trains on it.
#[test]
fn planted_harris_exports_and_trains_a_regression() {
    let dir = tempfile::tempdir().unwrap();
    let d = dir.path();
    let common = [&FAST[..], &["--epochs", "2", "--format", "json"]].concat();
    let made = run(
        &[
            &common[..],
            &["--planted", "harris:1:3", "--export-data", "h.safetensors"],
        ]
        .concat(),
        d,
    );
    assert!(made.status.success(), "{}", stderr(&made));
    let from_file = run(&[&common[..], &["--data", "h.safetensors"]].concat(), d);
    assert!(from_file.status.success(), "{}", stderr(&from_file));
    let (a, b) = (json_lines(&made), json_lines(&from_file));
    assert_eq!(a.len(), 3);
    for (x, y) in a[..2].iter().zip(&b[..2]) {
        assert_eq!(x["loss_hash"], y["loss_hash"]);
        assert_eq!(x["val"], y["val"]);
        assert!(x["val"]["r2"].as_f64().is_some() && x["test"]["mae"].as_f64().is_some());
    }
    let other_seed = run(&[&common[..], &["--planted", "harris:1:4"]].concat(), d);
    assert!(other_seed.status.success(), "{}", stderr(&other_seed));
    assert_ne!(json_lines(&other_seed)[0]["loss_hash"], a[0]["loss_hash"]);
    let mlp = run(
        &[&common[..], &["--data", "h.safetensors", "--features-only"]].concat(),
        d,
    );
    assert!(mlp.status.success(), "{}", stderr(&mlp));
    assert!(json_lines(&mlp)[1]["test"]["r2"].as_f64().is_some());
}

/// `--planted mag:...` generates the mag-shaped dataset (here at 1/4096),
/// `--export-data` writes it, `--data` trains on the file with the same
/// bits, and `--features-only` trains the self-loop baseline on it.
#[test]
fn planted_mag_exports_and_trains_and_features_only_trains() {
    let dir = tempfile::tempdir().unwrap();
    let d = dir.path();
    let common = [&FAST[..], &["--epochs", "2", "--format", "json"]].concat();
    let made = run(
        &[
            &common[..],
            &[
                "--planted",
                "mag:4096:0.6:0.3:5",
                "--export-data",
                "mag.safetensors",
            ],
        ]
        .concat(),
        d,
    );
    assert!(made.status.success(), "{}", stderr(&made));
    let from_file = run(&[&common[..], &["--data", "mag.safetensors"]].concat(), d);
    assert!(from_file.status.success(), "{}", stderr(&from_file));
    let (a, b) = (json_lines(&made), json_lines(&from_file));
    assert_eq!(a.len(), 3);
    for (x, y) in a[..2].iter().zip(&b[..2]) {
        assert_eq!(x["train_loss"], y["train_loss"]);
        assert_eq!(x["val"], y["val"]);
        assert!(x["elapsed"].as_f64().unwrap() >= x["seconds"].as_f64().unwrap());
    }
    let mlp = run(
        &[
            &common[..],
            &["--data", "mag.safetensors", "--features-only"],
        ]
        .concat(),
        d,
    );
    assert!(mlp.status.success(), "{}", stderr(&mlp));
    let m = json_lines(&mlp);
    assert_eq!(m.len(), 3);
    assert_ne!(m[0]["train_loss"], a[0]["train_loss"]);
    assert!(m[2]["test"]["accuracy"].as_f64().is_some());
}
