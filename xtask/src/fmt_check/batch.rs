//! One batch of files through rustfmt in file mode, surviving a crash: when
//! rustfmt panics or is killed by a signal on a batch, each of its inputs is
//! run again on its own, so the crash is pinned on the input that causes it
//! and every other input keeps its normal verdict (and its crate root).

use std::collections::{HashMap, HashSet};
use std::path::{Path, PathBuf};

use rayon::prelude::*;

use super::rustfmt::{FileRun, Mode, Rustfmt};

/// What a batch gave: the merged runs, and the inputs rustfmt crashed on.
#[derive(Debug, Default)]
pub struct BatchResult {
    /// Every file rustfmt reached.
    pub reached: Vec<PathBuf>,
    /// [`Mode::Emit`]: the formatted text of each reached file.
    pub texts: HashMap<PathBuf, String>,
    /// [`Mode::Check`]: the reached files that are not formatted.
    pub differ: HashSet<PathBuf>,
    /// rustfmt's warnings.
    pub warnings: Vec<String>,
    /// The inputs rustfmt crashed on when run alone, with how.
    pub crashed: Vec<(PathBuf, String)>,
}

impl BatchResult {
    fn absorb(&mut self, run: FileRun) {
        self.reached.extend(run.reached);
        self.texts.extend(run.texts);
        self.differ.extend(run.differ);
        self.warnings.extend(run.warnings);
    }
}

/// Runs `inputs` in one rustfmt process; on a crash, each input alone.
///
/// # Errors
/// rustfmt could not be started.
pub fn run_batch(
    rustfmt: &Rustfmt,
    cwd: &Path,
    edition: Option<&str>,
    config: Option<&Path>,
    inputs: &[PathBuf],
    mode: Mode,
) -> anyhow::Result<BatchResult> {
    let mut result = BatchResult::default();
    let run = rustfmt.run_files(cwd, edition, config, inputs, mode)?;
    let Some(crash) = run.crash.clone() else {
        result.absorb(run);
        return Ok(result);
    };
    if inputs.len() == 1 {
        result.warnings.extend(run.warnings);
        result.crashed.push((inputs[0].clone(), crash));
        return Ok(result);
    }
    let alone: Vec<anyhow::Result<FileRun>> = inputs
        .par_iter()
        .with_max_len(1)
        .map(|i| rustfmt.run_files(cwd, edition, config, std::slice::from_ref(i), mode))
        .collect();
    for (input, run) in inputs.iter().zip(alone) {
        let run = run?;
        match run.crash.clone() {
            Some(crash) => {
                result.warnings.extend(run.warnings);
                result.crashed.push((input.clone(), crash));
            }
            None => result.absorb(run),
        }
    }
    Ok(result)
}
