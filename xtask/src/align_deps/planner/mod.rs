//! Plans the manifest edits that make every declaration of a policy
//! dependency hold the policy (see the module docs of `align_deps` for the
//! rules, in particular the default-features strategy).

use std::collections::{BTreeMap, BTreeSet};

use super::manifest::{Decl, DepTable, Form, Manifest, Op};
use super::plan::{AlignmentPlan, Finding, Splice};
use super::rule::Rule;
use crate::edit::try_apply_splices;
use crate::policy::{DependencyRule, Policy};
use crate::text::one_line;
use default_features::{DefaultFeatures, DfFix, df_ops};
use ws_entry::{can_add_ws_entry, plan_new_ws_entries};

mod default_features;
mod set_aside;
mod stricter;
mod two_names;
mod ws_entry;

pub(crate) use set_aside::hakari_sections;

/// The manifests of one workspace, parsed.
#[derive(Debug)]
pub struct Loaded {
    /// Every manifest read: the root one and each member's (once each).
    pub manifests: Vec<Manifest>,
    /// Index of the root manifest in `manifests`.
    pub root: usize,
    /// Indices of member manifests in `manifests` (may include `root`).
    pub members: Vec<usize>,
}

/// One declaration of the policy dependency, where it is.
#[derive(Debug, Clone, Copy)]
struct Use<'a> {
    m: &'a Manifest,
    table: &'a str,
    decl: Decl<'a>,
}

/// How a member that gains a new declaration of a policy dependency (the
/// thiserror source planner's rule 4: a crate that derives thiserror's `Error`
/// through a re-export) must write it, once the manifest plan is known.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum NewUser {
    /// `name = { workspace = true }`; with `default-features = true` when the
    /// workspace entry disables default features (so the crate still gets them).
    Inherit {
        /// Add `default-features = true`.
        default_features_true: bool,
    },
    /// `name = "R"` in place (`inherit = false`, or a single-package manifest).
    Own {
        /// The policy requirement.
        version: String,
    },
    /// No form works: the workspace entry cannot be inherited or written (why).
    Blocked(String),
}

/// The members' declarations of the package `name`: (declared on their
/// own, inheriting a `[workspace.dependencies]` entry of that package).
fn users_of<'m>(
    ws: &'m Loaded,
    tables: &'m [(usize, Vec<DepTable<'m>>)],
    ws_decls: &[Decl<'_>],
    name: &str,
) -> (Vec<Use<'m>>, Vec<Use<'m>>) {
    let mut own: Vec<Use<'m>> = Vec::new();
    let mut inherited: Vec<Use<'m>> = Vec::new();
    for (i, ts) in tables {
        let m = &ws.manifests[*i];
        for t in ts {
            for decl in Decl::all(t.table) {
                let u = Use {
                    m,
                    table: &t.name,
                    decl,
                };
                if decl.inherited() {
                    let ws_entry = ws_decls.iter().find(|w| w.key.get() == decl.key.get());
                    if ws_entry.is_some_and(|w| w.package() == name) {
                        inherited.push(u);
                    }
                } else if decl.package() == name {
                    own.push(u);
                }
            }
        }
    }
    (own, inherited)
}

/// Plans every manifest edit and finding for `policy` on `ws`, for a
/// workspace where some members will gain a new declaration
/// of the policy dependencies named in `new_users` (under the package's own
/// name). The `[workspace.dependencies]` entry they inherit is planned with
/// the others (created when missing, its requirement and `default-features`
/// aligned); the returned map says, per name, how the new declarations must
/// be written.
///
/// # Errors
/// Conflicting edits (a bug or an impossible manifest): nothing may be written.
pub fn plan_with_new_users(
    ws: &Loaded,
    policy: &Policy,
    new_users: &BTreeSet<String>,
) -> anyhow::Result<(AlignmentPlan, BTreeMap<String, NewUser>)> {
    let mut new_forms = BTreeMap::new();
    let mut plan = AlignmentPlan::new();
    let root = &ws.manifests[ws.root];
    let tables: Vec<(usize, Vec<DepTable<'_>>)> = ws
        .members
        .iter()
        .map(|&i| (i, ws.manifests[i].dependency_tables()))
        .collect();
    let ws_table = root.workspace_dependencies();
    let ws_decls: Vec<Decl<'_>> = ws_table
        .as_ref()
        .map(|t| Decl::all(t.table))
        .unwrap_or_default();
    let mut new_ws_lines: Vec<(String, String, String)> = Vec::new(); // (dependency, key, line)
    let mut entry_versions: BTreeMap<String, String> = BTreeMap::new();
    for (name, rule) in &policy.dependencies {
        let (own, inherited) = users_of(ws, &tables, &ws_decls, name);
        let mut ctx = Ctx {
            name,
            rule,
            root,
            exemptions: &policy.exemptions,
            plan: &mut plan,
            entry_version: BTreeMap::new(),
        };
        // exempt declarations and hakari-managed ones stay as they are
        let (own, inherited) = (ctx.set_aside(own), ctx.set_aside(inherited));
        // one package under two names in one crate: left for a person
        let (own, inherited) = ctx.two_names(own, inherited, &ws_decls);
        let inherit = rule.inherit && root.has_workspace();
        let adds_user = new_users.contains(name);
        if adds_user && !inherit {
            new_forms.insert(
                name.clone(),
                NewUser::Own {
                    version: rule.version.clone(),
                },
            );
        }
        let mut ws_needs_df_false: BTreeMap<&str, bool> = BTreeMap::new();
        let convert = ctx.triage_own(own, inherit)?;
        if inherit {
            let mut by_key: BTreeMap<&str, (Vec<Use<'_>>, Vec<Use<'_>>)> = BTreeMap::new();
            for u in convert {
                by_key.entry(u.decl.key.get()).or_default().0.push(u);
            }
            for u in inherited {
                by_key.entry(u.decl.key.get()).or_default().1.push(u);
            }
            if adds_user {
                by_key.entry(name.as_str()).or_default();
            }
            for (key, (converting, inheriting)) in by_key {
                let existing = ws_decls.iter().find(|w| w.key.get() == key);
                // the entry keeps the strictest requirement within the policy
                // that it or a converting member has, so no minimum drops
                ctx.pick_entry_version(key, existing, &converting);
                let adds = adds_user && key == name;
                let (needs_false, form) = ctx.plan_inherit(
                    key,
                    existing,
                    converting,
                    inheriting,
                    adds,
                    &mut new_ws_lines,
                )?;
                if adds {
                    new_forms.insert(name.clone(), form);
                }
                ws_needs_df_false.insert(key, needs_false);
            }
        }
        for w in ws_decls.iter().filter(|w| w.package() == name) {
            if !ctx.entry_version.contains_key(w.key.get())
                && let Some((v, _)) = w.version()
                && stricter::within(v, &rule.req)
            {
                ctx.entry_version
                    .insert(w.key.get().to_string(), v.to_string());
            }
            let needs_false = ws_needs_df_false.get(w.key.get()).copied().unwrap_or(false);
            ctx.plan_ws_entry(w, needs_false)?;
        }
        // what [workspace.dependencies] asks for where it is not the policy's text
        let stricter: Vec<String> = ctx
            .entry_version
            .values()
            .filter(|v| **v != rule.version)
            .cloned()
            .collect();
        if let Some(v) = stricter.into_iter().max_by_key(|v| stricter::minimum(v)) {
            entry_versions.insert(name.clone(), v);
        }
    }
    plan_new_ws_entries(root, &mut plan, new_ws_lines)?;
    plan.entry_requirements.extend(entry_versions);
    plan.findings
        .sort_by(|a, b| (&a.file, a.line, a.column).cmp(&(&b.file, b.line, b.column)));
    Ok((plan, new_forms))
}

struct Ctx<'p, 'a> {
    name: &'a str,
    rule: &'a DependencyRule,
    root: &'a Manifest,
    exemptions: &'a [crate::policy::Exemption],
    plan: &'p mut AlignmentPlan,
    /// Per `[workspace.dependencies]` key, the requirement its entry ends
    /// with where it is not the policy's own text: a stricter one within
    /// the policy ([`stricter`]), kept or taken from a converting member.
    entry_version: BTreeMap<String, String>,
}

impl Ctx<'_, '_> {
    fn quoted(&self, quote: char) -> String {
        format!("{quote}{}{quote}", self.rule.version)
    }

    /// The requirement the `[workspace.dependencies]` entry `key` ends with.
    fn entry_version(&self, key: &str) -> &str {
        self.entry_version
            .get(key)
            .map_or(self.rule.version.as_str(), String::as_str)
    }

    /// Records the strictest requirement within the policy among the
    /// existing entry `key` and the members converting to it (the entry's
    /// own first on a tie), if there is one.
    fn pick_entry_version(
        &mut self,
        key: &str,
        existing: Option<&Decl<'_>>,
        converting: &[Use<'_>],
    ) {
        let req = &self.rule.req;
        let entry = existing
            .filter(|w| w.source().is_none())
            .and_then(|w| w.version())
            .map(|(v, _)| v);
        let members = converting
            .iter()
            .filter(|u| u.decl.source().is_none())
            .filter_map(|u| u.decl.version().map(|(v, _)| v));
        let mut best: Option<&str> = None;
        for v in entry.into_iter().chain(members) {
            if !stricter::within(v, req) {
                continue;
            }
            if best.is_none_or(|b| stricter::minimum(v) > stricter::minimum(b)) {
                best = Some(v);
            }
        }
        if let Some(v) = best {
            self.entry_version.insert(key.to_string(), v.to_string());
        }
    }

    fn unfixable(&self, u: &Use<'_>, rule: Rule, wanted: &str, message: &str) -> Finding {
        let at = u.decl.key_offset();
        let (line, column) = u.m.line_col(at);
        let found = one_line(&u.m.text()[u.m.line_start(at)..u.m.line_end(at)], "; ");
        Finding {
            file: u.m.rel.clone(),
            line,
            column,
            rule: rule.into(),
            dependency: self.name.into(),
            key: Some(u.decl.key.get().to_string()),
            table: Some(u.table.into()),
            found,
            wanted: wanted.into(),
            fixable: false,
            message: message.into(),
            fixed_in: None,
        }
    }

    /// Records the splices of one declaration with one finding describing them.
    #[allow(clippy::too_many_arguments)]
    fn record(
        &mut self,
        m: &Manifest,
        table: &str,
        key: &str,
        splices: Vec<Splice>,
        rule: Rule,
        message: String,
    ) -> anyhow::Result<()> {
        if splices.is_empty() {
            return Ok(());
        }
        let mut f = describe(m, &splices, rule);
        f.dependency = self.name.into();
        f.key = Some(key.to_string());
        f.table = Some(table.into());
        f.message = message;
        self.plan
            .edits
            .add_splices(&m.path, &m.rel, m.text(), splices)?;
        self.plan.push_finding(f);
        Ok(())
    }
}

impl<'a> Ctx<'_, 'a> {
    /// Sorts the members' own declarations: one from another source gets
    /// an unfixable finding; with `inherit` the rest are returned to be
    /// converted, else each gets its version aligned here.
    fn triage_own<'u>(&mut self, own: Vec<Use<'u>>, inherit: bool) -> anyhow::Result<Vec<Use<'u>>> {
        let (name, rule) = (self.name, self.rule);
        let mut convert: Vec<Use<'u>> = Vec::new();
        for u in own {
            if let Some(src) = u.decl.source() {
                let key = u.decl.key.get();
                let renamed = if key == name {
                    String::new()
                } else {
                    format!(" (package {name})")
                };
                let f = self.unfixable(
                    &u,
                    Rule::Source,
                    &format!("version \"{}\" from crates.io", rule.version),
                    &format!(
                        "[{}] {key}{renamed} is a `{src}` dependency; align-deps does not touch git, path or registry sources: \
                         move it to crates.io {name} \"{}\" by hand, or exempt this one declaration in the policy \
                         ([[exempt]] manifest = \"{}\", dependency = \"{key}\", reason = \"...\")",
                        u.table, rule.version, u.m.rel
                    ),
                );
                self.plan.push_finding(f);
            } else if inherit {
                convert.push(u);
            } else {
                self.plan_own_version(&u)?;
            }
        }
        Ok(convert)
    }

    /// Version rewrite for an own declaration.
    fn version_splices(&self, u: &Use<'_>) -> Vec<Splice> {
        let quote = u.decl.quote(u.m.text());
        match (u.decl.form, u.decl.version()) {
            // already the policy, or stricter within it: kept as written
            (_, Some((v, _))) if v == self.rule.version || stricter::within(v, &self.rule.req) => {
                Vec::new()
            }
            (Form::Simple, Some((_, span))) => vec![Splice::replace(span, self.quoted(quote))],
            (_, Some(_)) => {
                u.m.decl_splices(&u.decl, &[Op::ReplaceValue("version", self.quoted(quote))])
            }
            (Form::Simple, None) => Vec::new(),
            (_, None) => u.m.decl_splices(
                &u.decl,
                &[Op::InsertFirst(format!("version = {}", self.quoted('"')))],
            ),
        }
    }

    /// `inherit = false` (or a single-package manifest): rewrite the requirement in place.
    fn plan_own_version(&mut self, u: &Use<'_>) -> anyhow::Result<()> {
        let splices = self.version_splices(u);
        let why = if self.rule.inherit {
            " (single-package manifest: no [workspace.dependencies] to inherit from)"
        } else {
            ""
        };
        let msg = format!(
            "[{}] {}: the policy requires \"{}\"{why}",
            u.table, self.name, self.rule.version
        );
        self.record(u.m, u.table, u.decl.key.get(), splices, Rule::Version, msg)
    }

    /// Plans one `[workspace.dependencies]` key: converts `converting` to
    /// `workspace = true`, fixes `default-features` on every user, and queues
    /// the workspace entry when it is missing (also when only a new user,
    /// `adds`, will inherit it). Returns whether the workspace entry must have
    /// `default-features = false`, and how a new user must declare it.
    fn plan_inherit(
        &mut self,
        key: &str,
        existing: Option<&Decl<'a>>,
        converting: Vec<Use<'_>>,
        inheriting: Vec<Use<'_>>,
        adds: bool,
        new_ws_lines: &mut Vec<(String, String, String)>,
    ) -> anyhow::Result<(bool, NewUser)> {
        let converting = match self.inheritable(key, existing, converting, adds) {
            Ok(c) => c,
            Err(blocked) => return Ok((false, blocked)),
        };
        let df = DefaultFeatures::of(existing, &converting, &inheriting);
        let ws_say = if df.needs_false && df.ws != Some(false) {
            format!(
                "; [workspace.dependencies] `{key}` gets default-features = false because a member disables them, so crates that had them keep them with default-features = true"
            )
        } else {
            String::new()
        };
        let has_converting = !converting.is_empty();
        self.convert_users(key, converting, df, &ws_say)?;
        self.fix_inheriting_users(key, inheriting, df, &ws_say)?;
        if existing.is_none() && (has_converting || adds) {
            new_ws_lines.push(self.new_ws_entry(key, df.needs_false));
        }
        Ok((
            df.needs_false,
            NewUser::Inherit {
                default_features_true: df.needs_false,
            },
        ))
    }

    /// The users of `converting` that can inherit the workspace entry; the
    /// others get an unfixable finding. `Err`: nobody can (no workspace
    /// entry can be added, or the entry is another package or source), and
    /// what blocks a new user.
    fn inheritable<'u>(
        &mut self,
        key: &str,
        existing: Option<&Decl<'a>>,
        converting: Vec<Use<'u>>,
        adds: bool,
    ) -> Result<Vec<Use<'u>>, NewUser> {
        let name = self.name;
        let mut converting = converting;
        if existing.is_none() && (adds || !converting.is_empty()) && !can_add_ws_entry(self.root) {
            let msg = "[workspace.dependencies] is not written as a standard `[workspace.dependencies]` table, so align-deps cannot add the entry members would inherit; add it by hand, then run align-deps again";
            for u in converting {
                let f = self.unfixable(&u, Rule::WorkspaceEntry, "workspace = true", msg);
                self.plan.push_finding(f);
            }
            return Err(NewUser::Blocked(msg.into()));
        }
        if let Some(w) = existing {
            let problem = if w.package() != name {
                Some((
                    Rule::Conflict,
                    format!(
                        "[workspace.dependencies] `{key}` is the package `{}`, not {name}: rename this dependency or that entry by hand",
                        w.package()
                    ),
                ))
            } else {
                w.source().map(|src| (Rule::Source, format!("[workspace.dependencies] `{key}` is a `{src}` dependency, so inheriting it would change where {name} comes from; fix that entry first")))
            };
            if let Some((rule, msg)) = problem {
                for u in converting {
                    let f = self.unfixable(&u, rule, "workspace = true", &msg);
                    self.plan.push_finding(f);
                }
                return Err(NewUser::Blocked(msg));
            }
            let ws_features = w.features();
            let (ok, lacking): (Vec<_>, Vec<_>) = converting
                .into_iter()
                .partition(|u| ws_features.iter().all(|f| u.decl.features().contains(f)));
            for u in lacking {
                let f = self.unfixable(
                    &u,
                    Rule::Features,
                    "workspace = true",
                    &format!(
                        "inheriting {name} would add the features {ws_features:?} of [workspace.dependencies] `{key}` to this crate; add them here or remove them from the workspace entry, then run align-deps again"
                    ),
                );
                self.plan.push_finding(f);
            }
            converting = ok;
        }
        Ok(converting)
    }

    /// Rewrites each of `converting` to `workspace = true`.
    fn convert_users(
        &mut self,
        key: &str,
        converting: Vec<Use<'_>>,
        df: DefaultFeatures,
        ws_say: &str,
    ) -> anyhow::Result<()> {
        let (name, version) = (self.name, self.entry_version(key).to_string());
        for u in converting {
            let fix = df.fix(&u.decl, DefaultFeatures::own(&u.decl));
            let splices = match u.decl.form {
                Form::Simple => {
                    let text = if fix == DfFix::SetTrue {
                        "{ workspace = true, default-features = true }"
                    } else {
                        "{ workspace = true }"
                    };
                    vec![Splice::replace(u.decl.item.span().unwrap_or(0..0), text)]
                }
                _ => {
                    let mut ops = Vec::new();
                    if u.decl.has("version") {
                        ops.push(Op::ReplaceKv("version", "workspace = true".into()));
                    } else {
                        ops.push(Op::InsertFirst("workspace = true".into()));
                    }
                    if u.decl.has("package") {
                        ops.push(Op::Remove("package"));
                    }
                    ops.extend(df_ops(&u.decl, fix));
                    u.m.decl_splices(&u.decl, &ops)
                }
            };
            let renamed = if key == name {
                String::new()
            } else {
                format!(" (renamed `{key}`)")
            };
            let msg = format!(
                "[{}] {name}{renamed}: inherit \"{version}\" from [workspace.dependencies]{ws_say}",
                u.table
            );
            self.record(u.m, u.table, u.decl.key.get(), splices, Rule::Inherit, msg)?;
        }
        Ok(())
    }

    /// Fixes `default-features` (and drops an ignored `version`) on each of
    /// `inheriting`, which already has `workspace = true`.
    fn fix_inheriting_users(
        &mut self,
        key: &str,
        inheriting: Vec<Use<'_>>,
        df: DefaultFeatures,
        ws_say: &str,
    ) -> anyhow::Result<()> {
        let name = self.name;
        for u in inheriting {
            let fix = df.fix(&u.decl, df.inherited(&u.decl));
            let mut ops = df_ops(&u.decl, fix);
            if u.decl.has("version") {
                ops.push(Op::Remove("version"));
            }
            if ops.is_empty() {
                continue;
            }
            let splices = u.m.decl_splices(&u.decl, &ops);
            let msg = match fix {
                DfFix::Remove => format!(
                    "[{}] {name}: default-features = false is ignored while [workspace.dependencies] `{key}` enables default features (a warning; an error on edition 2024); removed, effective features unchanged",
                    u.table
                ),
                DfFix::SetTrue => format!(
                    "[{}] {name}: keeps its default features explicitly{ws_say}",
                    u.table
                ),
                DfFix::Keep => format!(
                    "[{}] {name}: `version` beside `workspace = true` is ignored by cargo; removed",
                    u.table
                ),
            };
            self.record(
                u.m,
                u.table,
                u.decl.key.get(),
                splices,
                Rule::DefaultFeatures,
                msg,
            )?;
        }
        Ok(())
    }
}

/// A finding (location, found and wanted text) for `splices` of `m`; the
/// caller fills in dependency, table and message.
fn describe(m: &Manifest, splices: &[Splice], rule: Rule) -> Finding {
    let text = m.text();
    let start = splices.iter().map(|s| s.range.start).min().unwrap_or(0);
    let at_line_start = |p: usize| p > 0 && text.as_bytes()[p - 1] == b'\n';
    let region_start = m.line_start(start);
    let region_end = splices
        .iter()
        .map(|s| {
            let p = if s.range.is_empty() {
                s.range.start
            } else {
                s.range.end
            };
            if at_line_start(p) || p == 0 {
                p
            } else {
                m.line_end(p)
            }
        })
        .max()
        .unwrap_or(start)
        .max(region_start);
    let old = &text[region_start..region_end];
    let new = try_apply_splices(old, region_start, splices)
        .expect("a finding's splices lie in its region (planner bug)");
    let (line, column) = m.line_col(start);
    Finding {
        file: m.rel.clone(),
        line,
        column,
        rule: rule.into(),
        dependency: String::new(),
        key: None,
        table: None,
        found: one_line(old, "; "),
        wanted: one_line(&new, "; "),
        fixable: true,
        message: String::new(),
        fixed_in: None,
    }
}
