//! Reading what cargo and the test runners printed: did a build fail to
//! compile, and how many tests passed, failed and were skipped.

use std::fmt;
use std::ops::AddAssign;

/// Test counts, summed over every matrix entry.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct Counts {
    /// Tests that ran and passed.
    pub passed: u64,
    /// Tests that ran and did not pass (failed, timed out, crashed).
    pub failed: u64,
    /// Tests that did not run: ignored or filtered out.
    pub skipped: u64,
}

impl Counts {
    /// Tests that ran.
    pub fn ran(self) -> u64 {
        self.passed + self.failed
    }
}

impl AddAssign for Counts {
    fn add_assign(&mut self, o: Counts) {
        self.passed += o.passed;
        self.failed += o.failed;
        self.skipped += o.skipped;
    }
}

/// `N passed, N failed` plus `, N skipped` when any were.
impl fmt::Display for Counts {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{} passed, {} failed", self.passed, self.failed)?;
        if self.skipped > 0 {
            write!(f, ", {} skipped", self.skipped)?;
        }
        Ok(())
    }
}

/// Parses cargo-nextest's final summary line (on stderr), e.g.
/// `Summary [   0.075s] 4 tests run: 3 passed, 1 failed, 1 skipped`.
/// Anything counted that is not `passed` or `skipped` (failed, timed out,
/// exec failed, ...) counts as failed. `None` when there is no summary line.
pub fn parse_nextest(stderr: &str) -> Option<Counts> {
    let line = stderr
        .lines()
        .rev()
        .find(|l| l.trim_start().starts_with("Summary ["))?;
    let (_, tail) = line.split_once(" run:")?;
    let mut c = Counts::default();
    for part in tail.split(',') {
        let mut words = part.split_whitespace();
        let (Some(n), Some(what)) = (words.next(), words.next()) else {
            continue;
        };
        let Ok(n) = n.parse::<u64>() else { continue };
        match what {
            "passed" => c.passed += n,
            "skipped" => c.skipped += n,
            _ => c.failed += n,
        }
    }
    Some(c)
}

/// Sums libtest's `test result: ok. 2 passed; 0 failed; 1 ignored; 0 measured;
/// 0 filtered out; ...` lines (one per test binary, doctests included).
/// Ignored and filtered-out tests count as skipped. `None` when there is no
/// such line.
pub fn parse_libtest(stdout: &str) -> Option<Counts> {
    let mut total: Option<Counts> = None;
    for line in stdout.lines() {
        let Some(rest) = line.trim_start().strip_prefix("test result: ") else {
            continue;
        };
        let Some((_, counts)) = rest.split_once(". ") else {
            continue;
        };
        let mut c = Counts::default();
        for part in counts.split(';') {
            let part = part.trim();
            let Some((n, what)) = part.split_once(' ') else {
                continue;
            };
            let Ok(n) = n.parse::<u64>() else { continue };
            match what {
                "passed" => c.passed += n,
                "failed" => c.failed += n,
                "ignored" | "filtered out" => c.skipped += n,
                _ => {}
            }
        }
        *total.get_or_insert_with(Counts::default) += c;
    }
    total
}

/// How a `cargo ... --message-format json-render-diagnostics` build ended,
/// read from its JSON messages on stdout.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum BuildEnd {
    /// cargo reported a successful build.
    Built,
    /// Compilation started and failed (compiler errors, or a build script):
    /// the code is broken, exit 1.
    CompileFailed {
        /// Compiler messages at level `error`.
        errors: usize,
    },
    /// cargo stopped before compiling (manifest, resolution, network): exit 2.
    DidNotBuild,
}

/// Classifies a finished build from its JSON messages and exit success.
pub fn classify_build(json_stdout: &str, success: bool) -> BuildEnd {
    let mut errors = 0;
    let mut finished = None;
    for line in json_stdout.lines() {
        let Ok(v) = serde_json::from_str::<serde_json::Value>(line) else {
            continue;
        };
        match v.get("reason").and_then(|r| r.as_str()) {
            Some("compiler-message")
                if v.pointer("/message/level").and_then(|l| l.as_str()) == Some("error") =>
            {
                errors += 1;
            }
            Some("build-finished") => {
                finished = v.get("success").and_then(serde_json::Value::as_bool)
            }
            _ => {}
        }
    }
    match (success, finished) {
        (true, _) if errors == 0 => BuildEnd::Built,
        _ if errors > 0 || finished == Some(false) => BuildEnd::CompileFailed { errors },
        _ => BuildEnd::DidNotBuild,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn nextest_summary_lines() {
        let s = "        PASS [   0.004s] (3/3) g x\n────────────\n     Summary [   0.075s] 4 tests run: 3 passed, 1 failed, 1 skipped\n        FAIL [   0.070s] (4/4) g kernel_fails\nerror: test run failed\n";
        assert_eq!(
            parse_nextest(s),
            Some(Counts {
                passed: 3,
                failed: 1,
                skipped: 1
            })
        );
        let s = "     Summary [   0.009s] 3 tests run: 3 passed, 1 skipped\n";
        assert_eq!(
            parse_nextest(s),
            Some(Counts {
                passed: 3,
                failed: 0,
                skipped: 1
            })
        );
        let s = "     Summary [   1.000s] 5 tests run: 2 passed (1 slow), 2 failed, 1 timed out, 0 skipped\n";
        assert_eq!(
            parse_nextest(s),
            Some(Counts {
                passed: 2,
                failed: 3,
                skipped: 0
            })
        );
        let s =
            "     Summary [   0.000s] 0 tests run: 0 passed, 4 skipped\nerror: no tests to run\n";
        assert_eq!(
            parse_nextest(s),
            Some(Counts {
                passed: 0,
                failed: 0,
                skipped: 4
            })
        );
        // cancelled runs print "N/M tests run"
        let s = "     Summary [   0.1s] 2/4 tests run: 1 passed, 1 failed, 0 skipped\n";
        assert_eq!(
            parse_nextest(s),
            Some(Counts {
                passed: 1,
                failed: 1,
                skipped: 0
            })
        );
        assert_eq!(parse_nextest("error: could not compile\n"), None);
    }

    #[test]
    fn libtest_results_are_summed() {
        let s = "running 3 tests\ntest a ... ok\n\ntest result: FAILED. 2 passed; 1 failed; 1 ignored; 0 measured; 2 filtered out; finished in 0.00s\n\n\
                 running 0 tests\n\ntest result: ok. 0 passed; 0 failed; 0 ignored; 0 measured; 0 filtered out; finished in 0.00s\n\
                 test result: ok. 4 passed; 0 failed; 0 ignored; 0 measured; 0 filtered out; finished in 0.10s\n";
        assert_eq!(
            parse_libtest(s),
            Some(Counts {
                passed: 6,
                failed: 1,
                skipped: 3
            })
        );
        assert_eq!(parse_libtest("error[E0308]: mismatched types\n"), None);
    }

    #[test]
    fn summary_text() {
        assert_eq!(
            Counts {
                passed: 3,
                failed: 0,
                skipped: 0
            }
            .to_string(),
            "3 passed, 0 failed"
        );
        assert_eq!(
            Counts {
                passed: 3,
                failed: 1,
                skipped: 2
            }
            .to_string(),
            "3 passed, 1 failed, 2 skipped"
        );
    }

    #[test]
    fn build_classification() {
        let err = r#"{"reason":"compiler-message","message":{"level":"error","message":"mismatched types"}}"#;
        let warn =
            r#"{"reason":"compiler-message","message":{"level":"warning","message":"unused"}}"#;
        let ok = r#"{"reason":"build-finished","success":true}"#;
        let bad = r#"{"reason":"build-finished","success":false}"#;
        assert_eq!(
            classify_build(&format!("{warn}\n{ok}\n"), true),
            BuildEnd::Built
        );
        assert_eq!(
            classify_build(&format!("{err}\n{bad}\n"), false),
            BuildEnd::CompileFailed { errors: 1 }
        );
        // a failing build script: no compiler error, but the build ran and failed
        assert_eq!(
            classify_build(&format!("{bad}\n"), false),
            BuildEnd::CompileFailed { errors: 0 }
        );
        // cargo never got to compile (bad manifest, no network)
        assert_eq!(classify_build("", false), BuildEnd::DidNotBuild);
    }
}
