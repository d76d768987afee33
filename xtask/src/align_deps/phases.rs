//! The four phases of [`super::run`], each a function of the previous one's
//! output:
//!
//! 1. [`load`]: read everything (the read-ahead while `cargo metadata`
//!    runs, the workspace lock and recovery, the policy, the manifests,
//!    `Cargo.lock` (once, handed to every later use), the policy's
//!    requirements against the registry, the source analysis) into
//!    [`Inputs`]. A malformed input stops the run here; nothing is planned.
//! 2. [`plan`]: the plan made without the exemptions (what they cover, to
//!    judge them) and the plan with them (exempt packages left out) into
//!    [`Planned`].
//! 3. [`judge`]: which exemptions are in use or stale, the toolchain floors,
//!    `[patch]` entries, what blocks a fix, the information lines, into
//!    [`Judged`]: the findings in report order.
//! 4. [`report`]: print the `--check` report, or apply the plan and print
//!    what was written.

use std::collections::BTreeSet;
use std::io::Write;
use std::path::PathBuf;

use crate::Outcome;
use crate::diag::{Diagnostic, Printer};
use crate::journal::Guard;
use crate::policy::LoadedPolicy;
use crate::timing::Timing;

use super::lockfile::LockText;
use super::migration::{Analysis, Prefetch};
use super::plan::{AlignmentPlan, Finding};
use super::planner::Loaded;
use super::report::{Report, apply_and_report, fix_command, report_check};
use super::{
    Args, SOURCE_MIGRATION, check_rules_match, exempt_view, exemption_use, load_manifests,
    load_metadata, lockfile, msrv, patches, plan_once, presumed_root, requirement_findings,
};

/// What every phase after [`load`] reads, and the lock held until the report
/// is done.
pub(super) struct Workspace {
    /// The workspace lock (an interrupted run already recovered); released
    /// when the run ends.
    guard: Guard,
    meta: cargo_metadata::Metadata,
    root: PathBuf,
    policy: LoadedPolicy,
    loaded: Loaded,
    /// The names of the workspace's packages.
    member_names: BTreeSet<String>,
    /// A policy requirement no published version matches (one finding each).
    unsatisfiable: Vec<Finding>,
    /// The requirements that could not be confirmed (information lines).
    unknown: Vec<String>,
    /// `Cargo.lock`, read once (or why it could not be): every use takes it
    /// from here.
    lock: std::io::Result<LockText>,
}

/// Phase 1's output.
pub(super) struct Inputs {
    ws: Workspace,
    /// The source analysis of every member it applies to.
    analyses: Vec<Analysis>,
}

/// Phase 2's output.
pub(super) struct Planned {
    ws: Workspace,
    /// The members as the exemptions see them.
    members: exemption_use::Members,
    /// The findings of the plan made without the exemptions (`None`: the
    /// policy has only source exemptions, the plan's own findings serve).
    full: Option<Vec<Finding>>,
    /// The plan with the exemptions, and its information lines.
    plan: AlignmentPlan,
    info: Vec<String>,
}

/// Phase 3's output: what the report shows.
pub(super) struct Judged {
    guard: Guard,
    plan: AlignmentPlan,
    info: Vec<String>,
    /// One notice per exemption in use.
    notes: Vec<Diagnostic>,
    n_manifests: usize,
    /// Toolchain-floor findings keep a fix run from writing.
    blocked: bool,
    /// What keeps a fix run from writing, as "... once {blocker}".
    blocker: Option<&'static str>,
}

/// Phase 1: everything read, the lock taken.
///
/// # Errors
/// No manifest, cargo rejecting the workspace, the lock, a malformed
/// policy or manifest, a rule for a package nobody declares, an
/// unsatisfiable requirement in a fix run, a source file that does not parse.
pub(super) fn load(
    args: &Args,
    err: &mut dyn Write,
    timing: &mut Timing,
) -> anyhow::Result<Inputs> {
    let manifest = crate::workspace::manifest_path(args.target.workspace.as_deref())?;
    // Cargo.lock and the Rust files are read on the other core while cargo
    // metadata runs (used only where unchanged since, under the root cargo names)
    let prefetch = presumed_root(&manifest).map(|r| {
        let lock_path = r.join("Cargo.lock");
        Prefetch::start(r, move || lockfile::read_ahead(lock_path))
    });
    let meta = load_metadata(&manifest);
    let (mut lock_ahead, mut cache) = match prefetch.map(Prefetch::finish) {
        Some((lock, cache)) => (lock.flatten(), Some(std::sync::Arc::new(cache))),
        None => (None, None),
    };
    let meta = meta?;
    // one run at a time; an interrupted run is recovered before anything is read
    let mut said = crate::text::CountingWriter::new(err);
    let guard = Guard::acquire(
        meta.target_directory.as_std_path(),
        meta.workspace_root.as_std_path(),
        !args.check,
        &mut said,
    )?;
    if said.written() > 0 {
        // it waited for another run or recovered one: files may have changed
        // within the file system's time granularity, so nothing read ahead is used
        cache = None;
        lock_ahead = None;
    }
    timing.mark(&format!(
        "cargo metadata ({} files read meanwhile)",
        cache.as_ref().map_or(0, |c| c.len())
    ));
    let root: PathBuf = meta.workspace_root.clone().into_std_path_buf();
    let policy = crate::policy::load_policy(args.target.policy.as_deref(), &root)?;
    let (loaded, member_names) = load_manifests(&meta, &root)?;
    check_rules_match(&loaded, &policy)?;
    timing.mark("manifests parsed");
    // the one read of Cargo.lock: the read-ahead's where it is unchanged since
    let lock = lockfile::read(&root.join("Cargo.lock"), lock_ahead);
    // a requirement no published version matches: refused before anything is planned
    let (unsatisfiable, unknown) = requirement_findings(&policy, &root, lock.as_ref().ok());
    if !args.check
        && let Some(f) = unsatisfiable.first()
    {
        anyhow::bail!(
            "{}:{}:{}: {}; nothing written",
            policy.path.display(),
            f.line,
            f.column,
            f.message
        );
    }
    timing.mark("requirements checked");
    // the source side only reads: a file that does not parse stops the run here
    let analyses =
        SOURCE_MIGRATION.analyze(&meta, &root, &policy.policy, cache, lock.as_ref().ok())?;
    timing.mark(&{
        let parsed = analyses
            .iter()
            .flat_map(|a| &a.files)
            .filter(|f| !f.original.is_empty());
        let (n, bytes) = parsed.fold((0, 0), |(n, b), f| (n + 1, b + f.original.len()));
        format!("sources analysed ({n} files parsed, {} KB)", bytes / 1024)
    });
    Ok(Inputs {
        ws: Workspace {
            guard,
            meta,
            root,
            policy,
            loaded,
            member_names,
            unsatisfiable,
            unknown,
            lock,
        },
        analyses,
    })
}

/// Phase 2: the plan without the exemptions (only when some exemption is
/// not a source exemption) and the plan with them.
///
/// # Errors
/// A planned edit that cannot be merged (an internal inconsistency).
pub(super) fn plan(inputs: Inputs) -> anyhow::Result<Planned> {
    let Inputs { mut ws, analyses } = inputs;
    let policy = &ws.policy.policy;
    let root = &ws.root;
    let members = exempt_view(&ws.meta, &analyses, root);
    // what the exemptions cover: the findings of the plan made without them
    let full = if policy
        .exemptions
        .iter()
        .any(|e| !matches!(e.kind, crate::policy::ExemptKind::Source(_)))
    {
        let mut bare = policy.clone();
        bare.exemptions.clear();
        Some(
            plan_once(&mut ws.loaded, analyses.clone(), &bare, root)?
                .0
                .findings,
        )
    } else {
        None
    };
    // exempt packages: their manifests and sources are left out of the plan
    let exempt_packages = exemption_use::packages(&policy.exemptions);
    let exempt_manifests: BTreeSet<PathBuf> = ws
        .meta
        .workspace_packages()
        .iter()
        .filter(|p| exempt_packages.contains(p.name.as_str()))
        .map(|p| p.manifest_path.clone().into_std_path_buf())
        .collect();
    let manifests = &ws.loaded.manifests;
    ws.loaded
        .members
        .retain(|&i| !exempt_manifests.contains(&manifests[i].path));
    let analyses: Vec<_> = analyses
        .into_iter()
        .filter(|a| !exempt_packages.contains(a.package.as_str()))
        .collect();
    let (plan, info) = plan_once(&mut ws.loaded, analyses, policy, root)?;
    Ok(Planned {
        ws,
        members,
        full,
        plan,
        info,
    })
}

/// Phase 3: the exemptions judged, every finding the plan does not make
/// (unsatisfiable requirements, toolchain floors, patches, stale
/// exemptions) added, the findings in report order, the information lines.
pub(super) fn judge(planned: Planned, timing: &mut Timing) -> Judged {
    let Planned {
        ws,
        members,
        full,
        mut plan,
        mut info,
    } = planned;
    let Workspace {
        guard,
        meta,
        root,
        policy: loaded_policy,
        loaded,
        member_names,
        unsatisfiable,
        mut unknown,
        lock,
    } = ws;
    let policy = &loaded_policy.policy;
    let judged = exemption_use::judge(
        &loaded_policy,
        &root,
        full.as_deref().unwrap_or(&plan.findings),
        &members,
    );
    let floor = msrv::findings(&meta, &loaded, &plan, policy, &root);
    let blocked = !floor.is_empty();
    let blocker = if !unsatisfiable.is_empty() {
        Some("the policy's requirement above is fixed")
    } else if blocked {
        Some("the toolchain floor findings above are settled")
    } else {
        None
    };
    plan.findings.extend(unsatisfiable);
    plan.findings.extend(floor);
    plan.findings.extend(patches::findings(
        &loaded.manifests[loaded.root],
        &root,
        policy,
    ));
    plan.findings.extend(judged.stale);
    plan.findings
        .sort_by(|a, b| (&a.file, a.line, a.column).cmp(&(&b.file, b.line, b.column)));
    timing.mark("planned");
    info.extend(lockfile::older_majors(&root, policy, &member_names, &lock));
    info.append(&mut unknown);
    Judged {
        guard,
        plan,
        info,
        notes: judged.notes,
        n_manifests: loaded.manifests.len(),
        blocked,
        blocker,
    }
}

/// Phase 4: the `--check` report (also of a fix run a blocker keeps from
/// writing), or the plan applied and what was written reported.
///
/// # Errors
/// A plan that does not validate, a failed write (rolled back), a report
/// that cannot be printed.
pub(super) fn report(
    judged: Judged,
    args: &Args,
    out: &mut dyn Write,
    err: &mut dyn Write,
    timing: &mut Timing,
) -> anyhow::Result<Outcome> {
    let mut printer = Printer::new(args.format.format, "align-deps", out, err);
    let report = Report {
        plan: &judged.plan,
        info: &judged.info,
        exempt: &judged.notes,
        n_manifests: judged.n_manifests,
        blocker: judged.blocker,
        fix_command: fix_command(&args.target),
    };
    let outcome = if args.check || judged.blocked {
        // (a fix run validates in `WriteSet::apply`)
        judged.plan.edits.validate()?;
        timing.mark("validated");
        report_check(&report, !args.check, &mut printer)
    } else {
        apply_and_report(&report, &mut printer, &judged.guard)
    };
    timing.mark("reported");
    timing.write_to(err)?;
    outcome
}
