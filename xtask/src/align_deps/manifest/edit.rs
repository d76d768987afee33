//! The edits of a manifest, as byte [`Splice`]s of its original text: new
//! lines, and the keys of one table-like declaration replaced, removed or
//! added ([`Op`]) with its layout (inline or table, line prefix, line ending)
//! kept.

use std::ops::Range;

use toml_edit::{Item, TableLike};

use super::{Decl, Form, Manifest};
use crate::align_deps::plan::Splice;

/// One `key = value` inside a table-like declaration.
#[derive(Debug, Clone)]
struct Kv {
    key: String,
    key_span: Range<usize>,
    value_span: Range<usize>,
}

/// An edit of one key of a table-like declaration.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Op {
    /// Replace `key = value` with the given `k = v` text.
    ReplaceKv(&'static str, String),
    /// Replace the value of `key` with the given text.
    ReplaceValue(&'static str, String),
    /// Remove `key = value`.
    Remove(&'static str),
    /// Add `k = v` before every other key.
    InsertFirst(String),
    /// Add `k = v` after every other key.
    InsertLast(String),
}

impl Manifest {
    /// Inserts `text` (one or more lines without a final newline) as new
    /// line(s) just after the line holding `offset`, in the file's line ending.
    pub fn insert_lines_after(&self, offset: usize, text: &str) -> Splice {
        let at = self.next_line_start(offset);
        let body = text.replace('\n', self.eol);
        let ends_with_nl = at > 0 && self.text().as_bytes()[at - 1] == b'\n';
        if ends_with_nl || at == 0 {
            Splice::insert(at, format!("{body}{}", self.eol))
        } else {
            Splice::insert(at, format!("{}{body}{}", self.eol, self.eol))
        }
    }

    /// The declaration's splices for `ops` (table-like forms) — see [`Op`].
    ///
    /// # Panics
    /// For a [`Form::Simple`] declaration (replace its value instead).
    pub fn decl_splices(&self, decl: &Decl<'_>, ops: &[Op]) -> Vec<Splice> {
        let table = decl
            .item
            .as_table_like()
            .expect("decl_splices needs a table-like declaration");
        let kvs = kvs(table);
        let mut splices = Vec::new();
        let removed: Vec<bool> = kvs
            .iter()
            .map(|kv| ops.contains(&Op::Remove(static_key(&kv.key))))
            .collect();
        for op in ops {
            match op {
                Op::ReplaceKv(k, text) => {
                    if let Some(kv) = kvs.iter().find(|kv| kv.key == *k) {
                        splices.push(Splice::replace(
                            kv.key_span.start..kv.value_span.end,
                            text.clone(),
                        ));
                    }
                }
                Op::ReplaceValue(k, text) => {
                    if let Some(kv) = kvs.iter().find(|kv| kv.key == *k) {
                        splices.push(Splice::replace(kv.value_span.clone(), text.clone()));
                    }
                }
                Op::Remove(_) | Op::InsertFirst(_) | Op::InsertLast(_) => {}
            }
        }
        let firsts: Vec<&String> = ops
            .iter()
            .filter_map(|o| {
                if let Op::InsertFirst(t) = o {
                    Some(t)
                } else {
                    None
                }
            })
            .collect();
        let lasts: Vec<&String> = ops
            .iter()
            .filter_map(|o| {
                if let Op::InsertLast(t) = o {
                    Some(t)
                } else {
                    None
                }
            })
            .collect();
        match decl.form {
            Form::Inline => self.inline_splices(decl, &kvs, &removed, &firsts, &lasts, splices),
            Form::Table | Form::Dotted => {
                self.table_splices(decl, &kvs, &removed, &firsts, &lasts, splices)
            }
            Form::Simple => panic!("decl_splices called on a simple declaration"),
        }
    }

    /// [`Manifest::decl_splices`] for an inline table: `splices` (the
    /// replacements) plus the removals and insertions inside the braces.
    fn inline_splices(
        &self,
        decl: &Decl<'_>,
        kvs: &[Kv],
        removed: &[bool],
        firsts: &[&String],
        lasts: &[&String],
        mut splices: Vec<Splice>,
    ) -> Vec<Splice> {
        let span = decl.item.span().expect("parsed items have spans");
        let kept: Vec<&Kv> = kvs
            .iter()
            .zip(removed)
            .filter(|(_, r)| !**r)
            .map(|(kv, _)| kv)
            .collect();
        if kept.is_empty() {
            // Nothing of the old table survives: write it anew.
            let all: Vec<&str> = firsts.iter().chain(lasts).map(|s| s.as_str()).collect();
            let body = if all.is_empty() {
                "{}".to_string()
            } else {
                format!("{{ {} }}", all.join(", "))
            };
            return vec![Splice::replace(span, body)];
        }
        // runs of removed keys
        let mut i = 0;
        while i < kvs.len() {
            if !removed[i] {
                i += 1;
                continue;
            }
            let mut j = i;
            while j + 1 < kvs.len() && removed[j + 1] {
                j += 1;
            }
            if j + 1 < kvs.len() {
                splices.push(Splice::delete(
                    kvs[i].key_span.start..kvs[j + 1].key_span.start,
                ));
            } else {
                splices.push(Splice::delete(
                    kvs[i - 1].value_span.end..kvs[j].value_span.end,
                ));
            }
            i = j + 1;
        }
        for t in firsts.iter() {
            splices.push(Splice::insert(kvs[0].key_span.start, format!("{t}, ")));
        }
        let last = kept.last().expect("kept is not empty");
        for t in lasts.iter() {
            splices.push(Splice::insert(last.value_span.end, format!(", {t}")));
        }
        splices
    }

    /// [`Manifest::decl_splices`] for a `[table]` or dotted keys: whole
    /// lines removed and inserted.
    fn table_splices(
        &self,
        decl: &Decl<'_>,
        kvs: &[Kv],
        removed: &[bool],
        firsts: &[&String],
        lasts: &[&String],
        mut splices: Vec<Splice>,
    ) -> Vec<Splice> {
        for (kv, r) in kvs.iter().zip(removed) {
            if *r {
                let start = self.line_start(kv.key_span.start);
                let end = self.next_line_start(kv.value_span.end);
                splices.push(Splice::delete(start..end));
            }
        }
        let prefix = |kv: &Kv| {
            self.text()[self.line_start(kv.key_span.start)..kv.key_span.start].to_string()
        };
        if let Some(first) = kvs.first() {
            let p = prefix(first);
            for t in firsts.iter() {
                let at = self.line_start(first.key_span.start);
                splices.push(Splice::insert(at, format!("{p}{t}{}", self.eol)));
            }
            let last = kvs
                .iter()
                .max_by_key(|kv| kv.value_span.end)
                .expect("not empty");
            let p = prefix(last);
            for t in lasts.iter() {
                splices.push(self.insert_lines_after(last.value_span.end, &format!("{p}{t}")));
            }
        } else {
            // an empty `[dependencies.thiserror]`: after its header
            let header_end = decl.item.span().map_or(0, |s| s.end);
            let all: Vec<&str> = firsts.iter().chain(lasts).map(|s| s.as_str()).collect();
            if !all.is_empty() {
                splices.push(self.insert_lines_after(header_end, &all.join("\n")));
            }
        }
        splices
    }

    /// Where a new `key = value` line goes at the end of a standard table
    /// (after its last key/value line, or after its header when empty), or
    /// `None` when the table is not a standard table (inline, dotted, implicit).
    pub fn table_append_point(&self, item: &Item) -> Option<usize> {
        let table = item.as_table()?;
        if table.is_dotted() || table.is_implicit() {
            return None;
        }
        let last = last_value_end(table);
        Some(last.unwrap_or_else(|| table.span().map_or(0, |s| s.end)))
    }
}

/// The end of the last value written inside `table` itself (recursing into
/// dotted keys, not into sub-tables that have their own header).
fn last_value_end(table: &toml_edit::Table) -> Option<usize> {
    let mut last = None;
    for (_, item) in table.iter() {
        let end = match item {
            Item::Value(v) => v.span().map(|s| s.end),
            Item::Table(t) if t.is_dotted() => last_value_end(t),
            _ => None,
        };
        last = last.max(end);
    }
    last
}

fn kvs(table: &dyn TableLike) -> Vec<Kv> {
    let mut out: Vec<Kv> = table
        .iter()
        .filter_map(|(k, item)| {
            let key = table.key(k)?;
            let key_span = key.span()?;
            let value_span = match item {
                Item::Value(v) => v.span()?,
                other => other.span()?,
            };
            Some(Kv {
                key: k.to_string(),
                key_span,
                value_span,
            })
        })
        .collect();
    out.sort_by_key(|kv| kv.key_span.start);
    out
}

/// Keys `Op` can name.
fn static_key(k: &str) -> &'static str {
    match k {
        "version" => "version",
        "workspace" => "workspace",
        "package" => "package",
        "default-features" => "default-features",
        "default_features" => "default_features",
        "features" => "features",
        "optional" => "optional",
        _ => "",
    }
}
