//! Test-only pause points of the write path, so that the integration tests
//! can race a fix or kill it at an exact instant instead of guessing with
//! sleeps.
//!
//! `XTASK_TEST_HOOK=<point>@<dir>` makes a run that reaches `<point>` create
//! `<dir>/paused` (holding the point's name), say so on stderr, and wait
//! until `<dir>/go` exists, then go on. Points: `after-staging` (every
//! temporary file written, journal still "staging"), `after-journal` (the
//! journal committed, nothing replaced), `before-replace:<k>` (`k` files
//! replaced, before the next one is compared with the disk),
//! `after-replaces` (every file replaced, journal not yet deleted).
//!
//! Harmless when set by accident: nothing happens unless the value names an
//! existing directory; a pause never lasts more than [`MAX_PAUSE`]; the hook
//! changes no decision of the run, only when it happens.

use std::path::PathBuf;
use std::time::{Duration, Instant};

/// The environment variable.
pub const VAR: &str = "XTASK_TEST_HOOK";

/// The longest a hook pauses a run.
pub const MAX_PAUSE: Duration = Duration::from_secs(60);

/// Pauses here if `XTASK_TEST_HOOK` names `point` and an existing directory.
pub fn point(point: &str) {
    let Some(value) = std::env::var_os(VAR) else {
        return;
    };
    let value = value.to_string_lossy();
    let Some((wanted, dir)) = value.split_once('@') else {
        return;
    };
    let dir = PathBuf::from(dir);
    if wanted != point || !dir.is_dir() {
        return;
    }
    eprintln!("xtask: {VAR}: paused at {point}");
    if std::fs::write(dir.join("paused"), point).is_err() {
        return;
    }
    let start = Instant::now();
    while !dir.join("go").exists() && start.elapsed() < MAX_PAUSE {
        std::thread::sleep(Duration::from_millis(5));
    }
}
