//! The disagreement tests of the Rust/CUDA boundary: kernels/*.cu are read
//! as text (comments stripped, `#define`s collected) and compared with the
//! table (`table.rs`) and [`crate::kernels::abi::defines`]. A kernel is a table entry
//! and either a kernel-defining macro, invoked by the translation unit from
//! the entry's `by` clause where its file's `// @kernels` line stands
//! (`source.rs`), or a kernel written out in its file. `table_sig_tests.rs`
//! compares every kernel's parameters with the table's signatures; the
//! kernels and choices of before the generation are pinned in
//! `table/pinned_tests.rs`.

use std::collections::{BTreeMap, BTreeSet};

use super::source::{KERNEL_FILES, invocation, kernels_marker, translation_unit};
use crate::kernels::abi;
use crate::kernels::table::*;

/// A function-like or object-like `#define`.
#[derive(Debug)]
struct Macro {
    params: Option<Vec<String>>,
    body: String,
}

/// The text with `//` and `/* */` comments removed (the sources have no `//`
/// or `/*` inside string literals).
fn strip_comments(text: &str) -> String {
    let mut out = String::new();
    let mut rest = text;
    while !rest.is_empty() {
        let line = rest.find("//");
        let block = rest.find("/*");
        match (line, block) {
            (Some(l), b) if b.is_none_or(|b| l < b) => {
                out.push_str(&rest[..l]);
                rest = rest[l..].find('\n').map_or("", |e| &rest[l + e..]);
            }
            (_, Some(b)) => {
                out.push_str(&rest[..b]);
                rest = rest[b..].find("*/").map_or("", |e| &rest[b + e + 2..]);
            }
            _ => {
                out.push_str(rest);
                rest = "";
            }
        }
    }
    out
}

/// The `#define`s of `text` (comment-free) and the text outside them.
fn split_defines(text: &str) -> (BTreeMap<String, Macro>, String) {
    let mut macros = BTreeMap::new();
    let mut top = String::new();
    let mut lines = text.lines();
    while let Some(line) = lines.next() {
        let t = line.trim_start();
        let Some(def) = t.strip_prefix("#define") else {
            top.push_str(line);
            top.push('\n');
            continue;
        };
        let mut full = def.to_string();
        while full.trim_end().ends_with('\\') {
            let cut = full.trim_end().len() - 1;
            full.truncate(cut);
            full.push(' ');
            full.push_str(lines.next().unwrap_or(""));
        }
        let full = full.trim_start();
        let name_end = full
            .find(|c: char| !(c.is_ascii_alphanumeric() || c == '_'))
            .unwrap_or(full.len());
        let name = full[..name_end].to_string();
        let rest = &full[name_end..];
        let (params, body) = if let Some(r) = rest.strip_prefix('(') {
            let close = r.find(')').expect("closed parameter list");
            let params = r[..close]
                .split(',')
                .map(|p| p.trim().to_string())
                .collect();
            (Some(params), r[close + 1..].to_string())
        } else {
            (None, rest.to_string())
        };
        assert!(
            macros
                .insert(name.clone(), Macro { params, body })
                .is_none(),
            "{name} defined twice in kernels/*.cu"
        );
    }
    (macros, top)
}

/// The arguments of the invocation whose `(` is at `text[open]`, and the end.
fn call_args(text: &str, open: usize) -> (Vec<String>, usize) {
    let mut depth = 0;
    let mut args = Vec::new();
    let mut cur = String::new();
    for (i, c) in text[open..].char_indices() {
        match c {
            '(' => {
                depth += 1;
                if depth == 1 {
                    continue;
                }
            }
            ')' => {
                depth -= 1;
                if depth == 0 {
                    args.push(cur.trim().to_string());
                    return (args, open + i + 1);
                }
            }
            ',' if depth == 1 => {
                args.push(cur.trim().to_string());
                cur.clear();
                continue;
            }
            _ => {}
        }
        cur.push(c);
    }
    panic!("unclosed invocation");
}

/// `body` with each parameter replaced by its argument (`##` pasting included).
fn substitute(body: &str, params: &[String], args: &[String]) -> String {
    let mut out = String::new();
    let mut word = String::new();
    let flush = |word: &mut String, out: &mut String| {
        match params.iter().position(|p| p == word) {
            Some(i) => out.push_str(&args[i]),
            None => out.push_str(word),
        }
        word.clear();
    };
    for c in body.chars() {
        if c.is_ascii_alphanumeric() || c == '_' {
            word.push(c);
        } else {
            flush(&mut word, &mut out);
            out.push(c);
        }
    }
    flush(&mut word, &mut out);
    out.replace(" ## ", "").replace("##", "")
}

/// The parameters of the function `name` declared in `text` after its
/// `__global__`, as written, object-like macros in the list expanded (a
/// comma inside template arguments would count as a separator: the sources
/// have none).
fn params(text: &str, name: &str, macros: &BTreeMap<String, Macro>) -> Vec<String> {
    let g = text.find("__global__").expect("a kernel");
    let at = text[g..]
        .find(&format!("{name}("))
        .unwrap_or_else(|| panic!("no `{name}(` after __global__"));
    let (args, _) = call_args(text, g + at + name.len());
    args.iter()
        .flat_map(|a| match macros.get(a.as_str()) {
            Some(Macro { params: None, body }) => {
                body.split(',').map(|p| p.trim().to_string()).collect()
            }
            _ => vec![a.clone()],
        })
        .collect()
}

/// The number of parameters of `name` in `text` ([`params`]).
fn arity(text: &str, name: &str, macros: &BTreeMap<String, Macro>) -> usize {
    params(text, name, macros).len()
}

/// The name of a kernel written out: `[void] [__launch_bounds__(...)] NAME(`.
fn written_out_name(after_global: &str) -> String {
    let mut t = after_global.trim_start();
    t = t.strip_prefix("void").unwrap_or(t).trim_start();
    if t.starts_with("__launch_bounds__") {
        let open = t.find('(').expect("(");
        let (_, end) = call_args(t, open);
        t = t[end..].trim_start();
    }
    t.split('(').next().unwrap_or("").trim().to_string()
}

/// Whether a macro's body defines a kernel named by its first parameter.
fn defines_kernel(m: &Macro) -> bool {
    m.body.contains("__global__")
        && m.params
            .as_ref()
            .and_then(|p| p.first())
            .map(String::as_str)
            == Some("NAME")
}

/// Kernels as `(name, parameters as written)`.
type Kernels = Vec<(String, Vec<String>)>;

/// The kernels of kernels/*.cu, the macros they define, and every `RTX_*`
/// identifier they use.
struct Sources {
    /// The kernels written out, then those of the table's instantiations
    /// (each macro's body with the entry's arguments).
    kernels: Kernels,
    /// The written-out kernels' names, with repeats, if any.
    written_out: Vec<String>,
    /// `(file, macro)` of every `// @kernels` line.
    markers: Vec<(String, String)>,
    macros: BTreeMap<String, Macro>,
    used: BTreeSet<String>,
    common: String,
    /// The text outside `#define`s, of every file.
    top: String,
}

fn sources() -> Sources {
    parse(&KERNEL_FILES, Kernel::ALL)
}

/// The parameters of `k`'s instantiation: its macro's body with the
/// kernel's name and the entry's arguments substituted.
fn instantiated(k: Kernel, macros: &BTreeMap<String, Macro>) -> Result<Vec<String>, String> {
    let (mac, _) = k.instantiation().expect("an instantiated kernel");
    let m = macros
        .get(mac)
        .ok_or_else(|| format!("{}: no `#define {mac}` in kernels/*.cu", k.name()))?;
    let Some(params) = m.params.as_ref().filter(|_| defines_kernel(m)) else {
        return Err(format!("{}: {mac} does not define a kernel NAME", k.name()));
    };
    let line = invocation(k).expect("an instantiated kernel");
    let (args, _) = call_args(&line, mac.len());
    // a variadic macro's last arguments may hold commas (`MoveWords<64, 64>`)
    let variadic = params.last().is_some_and(|p| p == "...");
    if args.len() != params.len() && !(variadic && args.len() >= params.len() - 1) {
        return Err(format!(
            "{}: `{line}`: {mac} takes {} parameters",
            k.name(),
            params.len()
        ));
    }
    let body = substitute(&m.body, params, &args);
    Ok(self::params(&body, k.name(), macros))
}

/// [`sources`] of the files `files` (`(name, text)`, the shared header first)
/// for the table's kernels `table`.
fn parse(files: &[(&str, &str)], table: &[Kernel]) -> Sources {
    let mut macros = BTreeMap::new();
    let mut kernels = Vec::new();
    let mut written_out = Vec::new();
    let mut markers = Vec::new();
    let mut used = BTreeSet::new();
    let mut all_top = String::new();
    for (file, text) in files {
        for line in text.lines() {
            if let Some(m) = kernels_marker(line) {
                markers.push((file.to_string(), m.to_string()));
            }
        }
        let text = strip_comments(text);
        let (file_macros, top) = split_defines(&text);
        for (name, m) in file_macros {
            assert!(
                macros.insert(name.clone(), m).is_none(),
                "{name} defined twice in kernels/*.cu"
            );
        }
        // a kernel written out directly, outside any macro
        for part in top.split("__global__").skip(1) {
            let name = written_out_name(part);
            let p = params(&format!("__global__{part}"), &name, &macros);
            written_out.push(name.clone());
            kernels.push((name, p));
        }
        let mut word = String::new();
        for c in text.chars().chain(std::iter::once(' ')) {
            if c.is_ascii_alphanumeric() || c == '_' {
                word.push(c);
            } else {
                if word.starts_with("RTX_") {
                    used.insert(std::mem::take(&mut word));
                }
                word.clear();
            }
        }
        all_top.push_str(&top);
    }
    for &k in table {
        if k.instantiation().is_some() {
            let p = instantiated(k, &macros).unwrap_or_else(|e| panic!("{e}"));
            kernels.push((k.name().to_string(), p));
        }
    }
    Sources {
        kernels,
        written_out,
        markers,
        macros,
        used,
        common: strip_comments(files[0].1),
        top: all_top,
    }
}

#[test]
fn every_kernel_has_one_table_entry_and_every_entry_one_kernel() {
    let s = sources();
    // the written-out kernels are the entries without a macro
    let mut written: Vec<&str> = s.written_out.iter().map(String::as_str).collect();
    written.sort_unstable();
    let mut plain: Vec<&str> = Kernel::ALL
        .iter()
        .filter(|k| k.instantiation().is_none())
        .map(|k| k.name())
        .collect();
    plain.sort_unstable();
    assert_eq!(
        written, plain,
        "written-out kernels vs table entries without `by`"
    );
    let table: BTreeSet<&str> = Kernel::ALL.iter().map(|k| k.name()).collect();
    assert_eq!(table.len(), Kernel::ALL.len(), "a name twice in the table");
    assert_eq!(s.kernels.len(), Kernel::ALL.len());
    assert_eq!(s.kernels.len(), 302);
    // every kernel-defining macro has one marker and instantiates a kernel
    // of the table, and no file invokes one itself
    let used: BTreeSet<&str> = Kernel::ALL
        .iter()
        .filter_map(|k| k.instantiation().map(|i| i.0))
        .collect();
    let defining: BTreeSet<&str> = s
        .macros
        .iter()
        .filter(|(_, m)| defines_kernel(m))
        .map(|(n, _)| n.as_str())
        .collect();
    assert_eq!(
        defining, used,
        "kernel-defining macros vs the table's `by` macros"
    );
    let marked: Vec<&str> = s.markers.iter().map(|(_, m)| m.as_str()).collect();
    assert_eq!(
        marked.iter().copied().collect::<BTreeSet<_>>(),
        used,
        "`// @kernels` lines vs the table's macros"
    );
    assert_eq!(
        marked.len(),
        used.len(),
        "a macro with two `// @kernels` lines"
    );
    for mac in &used {
        assert!(
            !s.top.contains(&format!("{mac}(")),
            "kernels/*.cu invokes {mac} itself: the table's entries are its invocations"
        );
    }
    // a marker follows its macro's #define (in its file or an earlier one)
    for (file, mac) in &s.markers {
        let at = KERNEL_FILES.iter().position(|(n, _)| n == file).unwrap();
        let def = KERNEL_FILES
            .iter()
            .position(|(_, t)| t.contains(&format!("#define {mac}(")))
            .unwrap();
        assert!(
            def <= at,
            "{file}: `// @kernels {mac}` before {mac} is defined"
        );
    }
}

#[test]
fn the_translation_unit_invokes_every_table_macro_once_per_entry() {
    let tu = translation_unit();
    let mut lines: BTreeMap<&str, usize> = BTreeMap::new();
    let used: BTreeSet<&str> = Kernel::ALL
        .iter()
        .filter_map(|k| k.instantiation().map(|i| i.0))
        .collect();
    for line in tu.lines() {
        if used.iter().any(|m| line.starts_with(&format!("{m}("))) {
            *lines.entry(line).or_default() += 1;
        }
    }
    let want: BTreeMap<String, usize> = Kernel::ALL
        .iter()
        .filter_map(|&k| invocation(k))
        .map(|l| (l, 1))
        .collect();
    let got: BTreeMap<String, usize> = lines.into_iter().map(|(l, n)| (l.to_string(), n)).collect();
    assert_eq!(got, want);
    // each right after its marker's block: the marker line, then its macro's lines
    let at = tu.find("// @kernels RTX_SCATTER\n").unwrap();
    let next = &tu[at..].lines().nth(1).unwrap();
    assert_eq!(*next, "RTX_SCATTER(scatter0_f32x4, float4, true, false)");
}

#[test]
fn every_kernel_takes_the_parameters_the_table_says() {
    let s = sources();
    for k in Kernel::ALL {
        let (_, n) = s
            .kernels
            .iter()
            .find(|(name, _)| name == k.name())
            .unwrap_or_else(|| panic!("{} not in kernels/*.cu", k.name()));
        assert_eq!(
            k.arity(),
            n.len(),
            "{}: table arity vs kernels/*.cu",
            k.name()
        );
    }
}

#[test]
fn the_table_is_indexed_by_discriminant() {
    for (i, k) in Kernel::ALL.iter().enumerate() {
        assert_eq!(*k as usize, i, "{k:?}");
    }
}

#[test]
fn every_rtx_macro_the_kernels_use_comes_from_the_rust_side() {
    let s = sources();
    let rust: BTreeSet<String> = abi::defines().into_iter().map(|(n, _)| n.into()).collect();
    let own: BTreeSet<String> = s.macros.keys().cloned().collect();
    let clash: Vec<_> = rust.intersection(&own).collect();
    assert!(
        clash.is_empty(),
        "defined in kernels/*.cu as well: {clash:?}"
    );
    let wanted: BTreeSet<String> = s.used.difference(&own).cloned().collect();
    assert_eq!(
        wanted, rust,
        "RTX_* macros the kernels use but do not define (left) vs the Rust side's defines (right)"
    );
    // each is guarded in common.cuh: `#ifndef NAME` then `#error`
    for name in &rust {
        let guard = format!("#ifndef {name}\n#error");
        assert!(
            s.common.contains(&guard),
            "no `{guard}` guard in common.cuh"
        );
    }
}

#[test]
fn op_codes_reach_the_switches() {
    // whichever of kernels/*.cu holds the elementwise switches
    let all: String = KERNEL_FILES
        .iter()
        .map(|(_, t)| strip_comments(t))
        .collect();
    for (name, _) in abi::defines() {
        if name.starts_with("RTX_UNARY_") || name.starts_with("RTX_BINARY_") {
            assert!(
                all.contains(&format!("case {name}:")),
                "no `case {name}:` in kernels/*.cu"
            );
        }
    }
}

#[test]
fn the_translation_unit_defines_before_it_checks() {
    let tu = crate::kernels::source::translation_unit();
    for (name, value) in abi::defines() {
        let def = tu.find(&format!("#define {name} {value}\n")).expect(name);
        let guard = tu.find(&format!("#ifndef {name}")).expect(name);
        assert!(def < guard, "{name} is checked before it is defined");
    }
}

#[test]
fn the_parser_reads_a_macro_kernels_parameters() {
    let (m, top) = split_defines(&strip_comments(
        "#define ARGS int a, int b\n\
         #define K(NAME, T) extern \"C\" __global__ void __launch_bounds__(256, 2) \\\n\
         NAME(const T* x, ARGS, f<T> y) {}\n\
         // K(c, float)\n",
    ));
    assert!(defines_kernel(&m["K"]));
    assert!(!defines_kernel(&m["ARGS"]));
    assert_eq!(top.trim(), "");
    let body = substitute(
        &m["K"].body,
        m["K"].params.as_ref().unwrap(),
        &["k".into(), "float".into()],
    );
    assert_eq!(
        params(&body, "k", &m),
        ["const float* x", "int a", "int b", "f<float> y"]
    );
    let part = " void __launch_bounds__(256) direct(int a, int b) {}";
    assert_eq!(written_out_name(part), "direct");
    assert_eq!(arity(&format!("__global__{part}"), "direct", &m), 2);
    // a kernel's instantiation: its macro's parameters with the entry's arguments
    let s = sources();
    let (_, p) = s
        .kernels
        .iter()
        .find(|(n, _)| n == "scatter0_f64x2")
        .unwrap();
    assert_eq!(p[0], "const double2* __restrict__ vals");
}

mod signatures;
