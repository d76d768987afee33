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

use std::sync::Mutex;
use std::sync::atomic::{AtomicI32, Ordering};

/// The signal received while caught (0: none).
static PENDING: AtomicI32 = AtomicI32::new(0);

/// The signals a write catches.
const CAUGHT: [libc::c_int; 2] = [libc::SIGINT, libc::SIGTERM];

extern "C" fn record(sig: libc::c_int) {
    // an atomic store is async-signal-safe
    PENDING.store(sig, Ordering::SeqCst);
}

/// The handlers are installed while at least one [`Caught`] lives (writes
/// on several threads of one process, as in xtask's tests, share them): how
/// many live, and the actions to put back when the last one goes.
static INSTALLED: Mutex<(usize, Vec<(libc::c_int, libc::sigaction)>)> = Mutex::new((0, Vec::new()));

/// SIGINT and SIGTERM caught while alive; the previous actions come back
/// when the last one is dropped.
#[derive(Debug)]
pub struct Caught(());

/// Catches SIGINT and SIGTERM until the result is dropped.
pub fn catch() -> Caught {
    let mut installed = INSTALLED.lock().unwrap_or_else(|p| p.into_inner());
    if installed.0 == 0 {
        PENDING.store(0, Ordering::SeqCst);
        for sig in CAUGHT {
            // SAFETY: `sigaction` is plain data, all-zero is a valid value
            // (no handler, empty mask, no flags) that the fields below complete.
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
                installed.1.push((sig, old));
            }
        }
    }
    installed.0 += 1;
    Caught(())
}

impl Drop for Caught {
    fn drop(&mut self) {
        let mut installed = INSTALLED.lock().unwrap_or_else(|p| p.into_inner());
        installed.0 -= 1;
        if installed.0 == 0 {
            for (sig, old) in installed.1.drain(..) {
                // SAFETY: `old` is the action the kernel gave back for `sig`.
                unsafe { libc::sigaction(sig, &old, std::ptr::null_mut()) };
            }
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
