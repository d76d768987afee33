//! SIGINT and SIGTERM during a write: caught while [`super::txn`] replaces
//! files, so that an interrupted fix (Ctrl-C, `kill`, a CI job cancelled)
//! rolls back before the process ends instead of leaving a half-written
//! workspace for the next run to guess about. Outside a write the default
//! actions stand (the run dies at once: nothing of its own is half done).
//!
//! The handler only records the signal ([`pending`]); the write checks it
//! between steps and rolls back; `main` then ends the process by the same
//! signal ([`exit_if_interrupted`]), so that shells and CI see an
//! interrupted run.
//!
//! Also: SIGXFSZ (a file-size limit reached) is ignored ([`ignore_file_size_limit`]),
//! so that such a write fails with an error the write path handles (`EFBIG`)
//! instead of killing the process mid-write.

use std::sync::atomic::{AtomicI32, Ordering};

/// The signal received while caught (0: none).
static PENDING: AtomicI32 = AtomicI32::new(0);

/// The signals a write catches.
const CAUGHT: [libc::c_int; 2] = [libc::SIGINT, libc::SIGTERM];

extern "C" fn record(sig: libc::c_int) {
    // an atomic store is async-signal-safe
    PENDING.store(sig, Ordering::SeqCst);
}

/// The caught signals' handlers while alive; the previous ones come back
/// on drop.
pub struct Caught {
    previous: Vec<(libc::c_int, libc::sigaction)>,
}

impl std::fmt::Debug for Caught {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Caught").finish_non_exhaustive()
    }
}

/// Catches SIGINT and SIGTERM until the result is dropped.
pub fn catch() -> Caught {
    let mut previous = Vec::new();
    for sig in CAUGHT {
        // SAFETY: `sigaction` is plain data, all-zero is a valid value (no
        // handler, empty mask, no flags) that the fields below complete.
        let mut action: libc::sigaction = unsafe { std::mem::zeroed() };
        action.sa_sigaction = record as extern "C" fn(libc::c_int) as libc::sighandler_t;
        action.sa_flags = libc::SA_RESTART;
        // SAFETY: `action.sa_mask` is a valid, writable signal set.
        unsafe { libc::sigemptyset(&mut action.sa_mask) };
        // SAFETY: all-zero is a valid `sigaction` for the kernel to fill in.
        let mut old: libc::sigaction = unsafe { std::mem::zeroed() };
        // SAFETY: both pointers are valid for the call; the handler only
        // stores to an atomic, which is async-signal-safe.
        if unsafe { libc::sigaction(sig, &action, &mut old) } == 0 {
            previous.push((sig, old));
        }
    }
    Caught { previous }
}

impl Drop for Caught {
    fn drop(&mut self) {
        for (sig, old) in &self.previous {
            // SAFETY: `old` is the action the kernel gave back for `sig`.
            unsafe { libc::sigaction(*sig, old, std::ptr::null_mut()) };
        }
    }
}

/// The signal received while caught, if any.
pub fn pending() -> Option<i32> {
    match PENDING.load(Ordering::SeqCst) {
        0 => None,
        s => Some(s),
    }
}

/// The signal's name (`SIGINT`).
pub fn name(sig: i32) -> &'static str {
    crate::text::signal_name(sig)
}

/// Ends the process by the signal a write caught, if one was caught (its
/// default action, as if it had not been caught); returns otherwise.
pub fn exit_if_interrupted() {
    let Some(sig) = pending() else {
        return;
    };
    // SAFETY: restoring the default action and raising a signal are plain
    // calls with valid arguments; the default action of SIGINT and SIGTERM
    // ends the process.
    unsafe {
        libc::signal(sig, libc::SIG_DFL);
        libc::raise(sig);
    }
}

/// Ignores SIGXFSZ, so that a write past a file-size limit is an error
/// (`EFBIG`) the write path handles, not a kill in the middle of it.
pub fn ignore_file_size_limit() {
    // SAFETY: setting a signal's action to "ignore" is a plain call with
    // valid arguments.
    unsafe { libc::signal(libc::SIGXFSZ, libc::SIG_IGN) };
}
