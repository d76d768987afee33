//! The tests of an entry across the GPUs of a host: one cargo-nextest
//! partition per visible GPU (`--partition count:i/N`, GPU `i - 1` made the
//! only one the partition sees through `CUDA_VISIBLE_DEVICES`), run in
//! parallel, their counts merged into one summary. One GPU, or `cargo
//! test` (which cannot partition), runs one partition: the plain run.
//!
//! [`PARTITIONS_ENV`] (`RTX_GPU_TEST_PARTITIONS`) caps the number of
//! partitions (`1` turns partitioning off).

use std::io::Write;
use std::process::Command;

use anyhow::bail;

use super::Runner;
use super::process::{self, Captured, Stdout};
use super::results::{Counts, parse_nextest};

/// Environment variable capping the partitions (a positive integer).
pub const PARTITIONS_ENV: &str = "RTX_GPU_TEST_PARTITIONS";

/// How many partitions to run for `devices` visible GPUs with `runner`,
/// `cap` being [`PARTITIONS_ENV`]'s value.
///
/// # Errors
/// A `cap` that is not a positive integer.
pub fn partition_count(devices: u32, runner: Runner, cap: Option<&str>) -> anyhow::Result<u32> {
    let cap = match cap.map(str::trim) {
        None | Some("") => u32::MAX,
        Some(s) => match s.parse::<u32>() {
            Ok(n) if n > 0 => n,
            _ => bail!("{PARTITIONS_ENV}=`{s}`: expected a positive integer"),
        },
    };
    Ok(match runner {
        Runner::CargoTest => 1,
        Runner::Nextest => devices.clamp(1, cap.max(1)),
    })
}

/// The device count in the probe's description (`DeviceInfo`'s display,
/// `NAME (N devices), driver API ...`, as the isolated probe returns it);
/// 1 when it cannot be read.
pub fn device_count(description: &str) -> u32 {
    let Some(end) = description.rfind(" device") else {
        return 1;
    };
    let head = &description[..end];
    head.rfind('(')
        .and_then(|i| head[i + 1..].trim().parse::<u32>().ok())
        .unwrap_or(1)
        .max(1)
}

/// The `CUDA_VISIBLE_DEVICES` value of partition `i` (0-based): the `i`-th
/// entry of the parent's list when it has one, else `i`.
pub fn visible_device(i: u32, parent: Option<&str>) -> String {
    if let Some(list) = parent.filter(|l| !l.trim().is_empty()) {
        let ids: Vec<&str> = list.split(',').map(str::trim).collect();
        if let Some(id) = ids.get(i as usize) {
            return (*id).to_owned();
        }
    }
    i.to_string()
}

/// Merges the partitions' counts: passed and failed add up; nextest counts
/// as skipped every test outside a partition, so each partition's `ran +
/// skipped` is the whole list, and the merged skipped is that minus all
/// that ran.
pub fn merge(parts: &[Counts]) -> Counts {
    let mut c = Counts::default();
    let mut listed = 0;
    for p in parts {
        c.passed += p.passed;
        c.failed += p.failed;
        listed = listed.max(p.ran() + p.skipped);
    }
    c.skipped = listed.saturating_sub(c.ran());
    c
}

/// One partition's run: its header line, how it ended, and its stdout and
/// stderr as they came.
struct PartitionRun {
    head: String,
    captured: Captured,
    out: Vec<u8>,
    err: Vec<u8>,
}

/// Runs `make(i, n)` (the runner's command for partition `i + 1` of `n`)
/// for every partition at once, each seeing one GPU; then writes each
/// partition's output in order under a header, and returns the merged counts
/// (`None` when a partition reported none) and whether every run succeeded.
///
/// # Errors
/// A child that cannot be started or ran past its limit; a writer failing.
pub fn run_partitions(
    n: u32,
    make: impl Fn(u32, u32) -> Command + Sync,
    out: &mut dyn Write,
    err: &mut dyn Write,
) -> anyhow::Result<(Option<Counts>, bool)> {
    let parent = std::env::var("CUDA_VISIBLE_DEVICES").ok();
    let runs: Vec<anyhow::Result<PartitionRun>> = std::thread::scope(|s| {
        let handles: Vec<_> = (0..n)
            .map(|i| {
                let (make, parent) = (&make, parent.as_deref());
                s.spawn(move || {
                    let gpu = visible_device(i, parent);
                    let mut cmd = make(i, n);
                    cmd.env("CUDA_VISIBLE_DEVICES", &gpu);
                    let head = format!(
                        "gpu-test: partition {}/{n} on GPU {gpu}: {}",
                        i + 1,
                        process::display(&cmd)
                    );
                    let (mut o, mut e) = (Vec::new(), Vec::new());
                    let captured = process::run(&mut cmd, Stdout::Echo, &mut o, &mut e)?;
                    Ok(PartitionRun {
                        head,
                        captured,
                        out: o,
                        err: e,
                    })
                })
            })
            .collect();
        handles
            .into_iter()
            .map(|h| {
                h.join()
                    .unwrap_or_else(|_| bail!("a partition's thread panicked"))
            })
            .collect()
    });
    let mut counts = Some(Vec::new());
    let mut success = true;
    for run in runs {
        let run = run?;
        writeln!(out, "{}", run.head)?;
        out.write_all(&run.out)?;
        err.write_all(&run.err)?;
        success &= run.captured.status.success();
        match (parse_nextest(&run.captured.stderr), counts.as_mut()) {
            (Some(k), Some(v)) => v.push(k),
            _ => counts = None,
        }
    }
    out.flush()?;
    Ok((counts.map(|v| merge(&v)), success))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn one_partition_per_gpu_with_nextest_only() {
        assert_eq!(partition_count(4, Runner::Nextest, None).unwrap(), 4);
        assert_eq!(partition_count(1, Runner::Nextest, None).unwrap(), 1);
        assert_eq!(partition_count(4, Runner::CargoTest, None).unwrap(), 1);
        assert_eq!(partition_count(4, Runner::Nextest, Some("2")).unwrap(), 2);
        assert_eq!(partition_count(2, Runner::Nextest, Some("8")).unwrap(), 2);
        assert!(partition_count(2, Runner::Nextest, Some("0")).is_err());
        assert!(partition_count(2, Runner::Nextest, Some("x")).is_err());
    }

    #[test]
    fn the_device_count_is_read_off_the_probes_description() {
        let info = |devices| super::super::DeviceInfo {
            library: "libcuda.so.1".into(),
            driver_api: 13000,
            devices,
            name: Some("NVIDIA H200 (SXM)".into()),
        };
        assert_eq!(device_count(&info(1).to_string()), 1);
        assert_eq!(device_count(&info(8).to_string()), 8);
        assert_eq!(device_count("something else"), 1);
    }

    #[test]
    fn partitions_see_the_parents_gpus_in_order() {
        assert_eq!(visible_device(0, None), "0");
        assert_eq!(visible_device(2, None), "2");
        assert_eq!(visible_device(1, Some("3, 5")), "5");
        assert_eq!(visible_device(2, Some("3,5")), "2");
        assert_eq!(visible_device(0, Some("")), "0");
    }

    #[test]
    fn merged_skips_are_the_tests_no_partition_ran() {
        // 5 tests, one ignored: partitions ran 2 and 2 (one failed)
        let a = Counts {
            passed: 2,
            failed: 0,
            skipped: 3,
        };
        let b = Counts {
            passed: 1,
            failed: 1,
            skipped: 3,
        };
        assert_eq!(
            merge(&[a, b]),
            Counts {
                passed: 3,
                failed: 1,
                skipped: 1
            }
        );
        assert_eq!(merge(&[a]), a);
    }
}
