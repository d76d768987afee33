//! The `[workspace.dependencies]` side of the plan: the entry of each
//! policy dependency that members inherit, fixed in place or added (the
//! table created when it is missing).

use super::{Ctx, Use};
use crate::align_deps::manifest::{Decl, Form, Manifest, Op};
use crate::align_deps::plan::{AlignmentPlan, Finding, Splice};
use crate::align_deps::rule::Rule;

impl Ctx<'_, '_> {
    /// The missing `[workspace.dependencies]` line for `key`: (package, key, line).
    pub(super) fn new_ws_entry(&self, key: &str, needs_false: bool) -> (String, String, String) {
        let (name, version) = (self.name, self.entry_version(key));
        let mut fields = Vec::new();
        if key != name {
            fields.push(format!("package = \"{name}\""));
        }
        let simple = fields.is_empty() && !needs_false;
        fields.push(format!("version = \"{version}\""));
        if needs_false {
            fields.push("default-features = false".into());
        }
        let value = if simple {
            format!("\"{version}\"")
        } else {
            format!("{{ {} }}", fields.join(", "))
        };
        (
            name.to_string(),
            key.to_string(),
            format!(
                "{} = {value}",
                crate::align_deps::manifest::display_key(key)
            ),
        )
    }

    /// Fixes one `[workspace.dependencies]` entry of the package: its
    /// requirement and, when `needs_false`, `default-features = false`.
    pub(super) fn plan_ws_entry(&mut self, w: &Decl<'_>, needs_false: bool) -> anyhow::Result<()> {
        let root = self.root;
        let table = "workspace.dependencies";
        let u = Use {
            m: root,
            table,
            decl: *w,
        };
        if let Some(src) = w.source() {
            let f = self.unfixable(
                &u,
                Rule::Source,
                &format!("version \"{}\" from crates.io", self.rule.version),
                &format!(
                    "[workspace.dependencies] `{}` is a `{src}` dependency; align-deps does not touch git, path or registry sources: change it by hand",
                    w.key.get()
                ),
            );
            self.plan.push_finding(f);
            return Ok(());
        }
        let df_written = w.default_features();
        let want_df = needs_false && df_written.map(|(_, v)| v) != Some(false);
        let target = self.entry_version(w.key.get()).to_string();
        let version_ok = w.version().is_some_and(|(v, _)| v == target);
        let quoted = |q: char| format!("{q}{target}{q}");
        if version_ok && !want_df {
            return Ok(());
        }
        let quote = w.quote(root.text());
        let splices = if w.form == Form::Simple {
            let span = w.item.span().unwrap_or(0..0);
            if want_df {
                vec![Splice::replace(
                    span,
                    format!(
                        "{{ version = {}, default-features = false }}",
                        quoted(quote)
                    ),
                )]
            } else {
                vec![Splice::replace(span, quoted(quote))]
            }
        } else {
            let mut ops = Vec::new();
            if !version_ok {
                if w.has("version") {
                    ops.push(Op::ReplaceValue("version", quoted(quote)));
                } else {
                    ops.push(Op::InsertFirst(format!("version = {}", quoted('"'))));
                }
            }
            if want_df {
                match df_written {
                    Some((k, _)) => ops.push(Op::ReplaceValue(
                        if k == "default_features" {
                            "default_features"
                        } else {
                            "default-features"
                        },
                        "false".into(),
                    )),
                    None => ops.push(Op::InsertLast("default-features = false".into())),
                }
            }
            root.decl_splices(w, &ops)
        };
        let mut what = Vec::new();
        if !version_ok {
            if target == self.rule.version {
                what.push(format!("the policy requires \"{target}\""));
            } else {
                what.push(format!(
                    "\"{target}\", the strictest requirement within the policy's \"{}\" that a member inheriting it asks for (so no minimum drops)",
                    self.rule.version
                ));
            }
        }
        if want_df {
            what.push("default-features = false, because a member disables default features (members that had them keep them with default-features = true)".to_string());
        }
        let msg = format!(
            "[workspace.dependencies] `{}`: {}",
            w.key.get(),
            what.join("; ")
        );
        let rule = if version_ok {
            Rule::DefaultFeatures
        } else {
            Rule::Version
        };
        self.record(root, table, w.key.get(), splices, rule, msg)
    }
}

/// Whether a new `[workspace.dependencies]` entry can be written: the table
/// is a standard `[workspace.dependencies]` table, or absent under a `[workspace]`.
pub(super) fn can_add_ws_entry(root: &Manifest) -> bool {
    let Some(ws) = root.root().get("workspace") else {
        return false;
    };
    match ws.as_table_like().and_then(|w| w.get("dependencies")) {
        Some(item) => root.table_append_point(item).is_some(),
        None => ws.is_table(),
    }
}

/// Adds the queued `[workspace.dependencies]` entries to the root manifest,
/// creating the table when it is missing.
pub(super) fn plan_new_ws_entries(
    root: &Manifest,
    plan: &mut AlignmentPlan,
    lines: Vec<(String, String, String)>,
) -> anyhow::Result<()> {
    if lines.is_empty() {
        return Ok(());
    }
    let body: Vec<&str> = lines.iter().map(|(_, _, l)| l.as_str()).collect();
    let body = body.join("\n");
    let ws_deps = root
        .root()
        .get("workspace")
        .and_then(|w| w.as_table_like())
        .and_then(|w| w.get("dependencies"));
    let (splice, created) = match ws_deps {
        Some(item) => match root.table_append_point(item) {
            Some(at) => (root.insert_lines_after(at, &body), false),
            None => anyhow::bail!(
                "{}: internal error: no place for new [workspace.dependencies] entries; nothing written",
                root.rel
            ),
        },
        None => {
            let ws_item = root
                .root()
                .get("workspace")
                .expect("inherit implies a [workspace] table");
            match root.table_append_point(ws_item) {
                Some(at) => (
                    root.insert_lines_after(at, &format!("\n[workspace.dependencies]\n{body}")),
                    true,
                ),
                None => {
                    let text = root.text();
                    let eol = root.eol;
                    let lead = if text.is_empty() || text.ends_with('\n') {
                        eol.to_string()
                    } else {
                        format!("{eol}{eol}")
                    };
                    let add = format!(
                        "{lead}[workspace.dependencies]{eol}{}{eol}",
                        body.replace('\n', eol)
                    );
                    (Splice::insert(text.len(), add), true)
                }
            }
        }
    };
    let at = splice.range.start;
    let (line, _) = root.line_col(at);
    let line = line + usize::from(created) * 2;
    for (i, (dep, key, entry)) in lines.iter().enumerate() {
        let msg = if created {
            format!(
                "create [workspace.dependencies] with `{key}`: the policy has members inherit {dep} from it"
            )
        } else {
            format!(
                "[workspace.dependencies] has no `{key}`: the policy has members inherit {dep} from it"
            )
        };
        plan.push_finding(Finding {
            file: root.rel.clone(),
            line: line + i,
            column: 1,
            rule: Rule::WorkspaceEntry.into(),
            dependency: dep.clone(),
            key: Some(key.clone()),
            table: Some("workspace.dependencies".into()),
            found: String::new(),
            wanted: entry.clone(),
            fixable: true,
            message: msg,
            fixed_in: None,
        });
    }
    plan.edits
        .add_splices(&root.path, &root.rel, root.text(), vec![splice])
}
