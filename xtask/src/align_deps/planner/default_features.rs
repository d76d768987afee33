//! The `default-features` rule of inheriting a `[workspace.dependencies]`
//! entry (see the module docs of `align_deps` on effective default features).

use super::Use;
use crate::align_deps::manifest::{Decl, Op};

/// What a member declaration needs about `default-features`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) enum DfFix {
    Keep,
    SetTrue,
    Remove,
}

/// The manifest edits that carry out `fix` on declaration `d`.
pub(super) fn df_ops(d: &Decl<'_>, fix: DfFix) -> Vec<Op> {
    let key = match d.default_features() {
        Some(("default_features", _)) => "default_features",
        _ => "default-features",
    };
    match fix {
        DfFix::Keep => Vec::new(),
        DfFix::Remove => vec![Op::Remove(key)],
        DfFix::SetTrue if d.default_features().is_some() => {
            vec![Op::ReplaceValue(key, "true".into())]
        }
        DfFix::SetTrue => vec![Op::InsertLast("default-features = true".into())],
    }
}

/// The `default-features` of one `[workspace.dependencies]` key: what the
/// workspace entry says, and whether it must say `false` (see the module
/// docs on effective default features).
#[derive(Debug, Clone, Copy)]
pub(super) struct DefaultFeatures {
    /// The entry's `default-features`, if written.
    pub(super) ws: Option<bool>,
    /// A user disables them: the entry must have `default-features = false`.
    pub(super) needs_false: bool,
}

impl DefaultFeatures {
    pub(super) fn of(
        existing: Option<&Decl<'_>>,
        converting: &[Use<'_>],
        inheriting: &[Use<'_>],
    ) -> Self {
        let ws = existing.and_then(|w| w.default_features()).map(|(_, v)| v);
        let mut df = DefaultFeatures {
            ws,
            needs_false: false,
        };
        df.needs_false = ws == Some(false)
            || converting.iter().any(|u| !Self::own(&u.decl))
            || inheriting.iter().any(|u| !df.inherited(&u.decl));
        df
    }

    /// A user's effective default features today, declared on its own.
    pub(super) fn own(d: &Decl<'_>) -> bool {
        d.default_features().is_none_or(|(_, v)| v)
    }

    /// A user's effective default features today, inheriting the entry.
    pub(super) fn inherited(self, d: &Decl<'_>) -> bool {
        match self.ws {
            Some(false) => d.default_features().is_none_or(|(_, v)| v),
            _ => true,
        }
    }

    /// What to do to a user's `default-features` whose effective value is `eff`.
    pub(super) fn fix(self, d: &Decl<'_>, eff: bool) -> DfFix {
        let written = d.default_features().map(|(_, v)| v);
        if self.needs_false {
            if eff && written != Some(true) {
                DfFix::SetTrue
            } else {
                DfFix::Keep
            }
        } else if written == Some(false) {
            DfFix::Remove // ignored by cargo (a warning; an error on edition 2024)
        } else {
            DfFix::Keep
        }
    }
}
