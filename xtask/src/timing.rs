//! Phase timings of a run, printed on stderr when asked for by an
//! environment variable. A leaf.

/// Phase timings of one run, recorded only when the environment variable
/// named at [`Timing::new`] is set (`XTASK_ALIGN_TIMING`, `XTASK_FMT_TIMING`).
#[derive(Debug)]
pub struct Timing {
    start: std::time::Instant,
    last: std::time::Instant,
    on: bool,
    lines: Vec<String>,
}

impl Timing {
    /// Starts the clock; records phases when `env_var` is set.
    pub fn new(env_var: &str) -> Timing {
        let now = std::time::Instant::now();
        Timing {
            start: now,
            last: now,
            on: std::env::var_os(env_var).is_some(),
            lines: Vec::new(),
        }
    }

    /// Records the phase that just ended: `timing: <phase>: N ms (total N ms)`.
    pub fn mark(&mut self, phase: &str) {
        if self.on {
            let now = std::time::Instant::now();
            self.lines.push(format!(
                "timing: {phase}: {:.1} ms (total {:.1} ms)",
                (now - self.last).as_secs_f64() * 1e3,
                (now - self.start).as_secs_f64() * 1e3
            ));
            self.last = now;
        }
    }

    /// Writes the recorded lines (to stderr, by the commands).
    ///
    /// # Errors
    /// Write errors.
    pub fn write_to(&self, err: &mut dyn std::io::Write) -> std::io::Result<()> {
        for l in &self.lines {
            writeln!(err, "{l}")?;
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn timing_records_only_when_its_variable_is_set() {
        let mut off = Timing::new("XTASK_NO_SUCH_TIMING_VARIABLE");
        off.mark("a");
        let mut buf = Vec::new();
        off.write_to(&mut buf).unwrap();
        assert!(buf.is_empty());
        let mut on = Timing::new("PATH");
        on.mark("a");
        on.mark("b");
        on.write_to(&mut buf).unwrap();
        let text = String::from_utf8(buf).unwrap();
        let lines: Vec<&str> = text.lines().collect();
        assert_eq!(lines.len(), 2, "{text}");
        assert!(lines[1].starts_with("timing: b: ") && lines[1].contains(" ms (total "));
    }
}
