//! The disagreement tests of the Rust/CUDA boundary: kernels/*.cu are parsed
//! as text (comments stripped, `#define`s collected, the kernel-defining macro
//! invocations expanded) and compared with [`Kernel`] and
//! [`crate::abi::defines`].

use std::collections::{BTreeMap, BTreeSet};

use super::*;
use crate::abi;
use crate::source::KERNEL_FILES;

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
}

/// Kernels as `(name, parameters as written)`.
type Kernels = Vec<(String, Vec<String>)>;

/// The kernels the invocations in `text` define, expanding macros.
fn expand_kernels(text: &str, macros: &BTreeMap<String, Macro>, out: &mut Kernels) {
    let bytes = text.as_bytes();
    let mut i = 0;
    while i < text.len() {
        let c = bytes[i] as char;
        if !(c.is_ascii_alphabetic() || c == '_')
            || (i > 0 && (bytes[i - 1].is_ascii_alphanumeric() || bytes[i - 1] == b'_'))
        {
            i += 1;
            continue;
        }
        let end = text[i..]
            .find(|c: char| !(c.is_ascii_alphanumeric() || c == '_'))
            .map_or(text.len(), |e| i + e);
        let word = &text[i..end];
        match macros.get(word) {
            Some(
                m @ Macro {
                    params: Some(params),
                    ..
                },
            ) if text[end..].starts_with('(') => {
                let (args, after) = call_args(text, end);
                if defines_kernel(m) {
                    // the invocation's arguments in the body: the types it binds
                    let body = substitute(&m.body, params, &args);
                    out.push((args[0].clone(), self::params(&body, &args[0], macros)));
                } else {
                    expand_kernels(&substitute(&m.body, params, &args), macros, out);
                }
                i = after;
            }
            _ => i = end,
        }
    }
}

/// Every kernel defined by kernels/*.cu (with repeats, if any), and every
/// macro they define, and every `RTX_*` identifier they use.
struct Sources {
    kernels: Kernels,
    macros: BTreeMap<String, Macro>,
    used: BTreeSet<String>,
    common: String,
}

fn sources() -> Sources {
    parse(&KERNEL_FILES)
}

/// [`sources`] of the files `files` (`(name, text)`, the shared header first).
fn parse(files: &[(&str, &str)]) -> Sources {
    let mut all_macros = BTreeMap::new();
    let mut kernels = Vec::new();
    let mut used = BTreeSet::new();
    let mut globals = 0;
    let mut kernel_macros = 0;
    for (_, text) in files {
        let text = strip_comments(text);
        globals += text.matches("__global__").count();
        let (macros, top) = split_defines(&text);
        // a kernel written out directly, outside any macro
        for part in top.split("__global__").skip(1) {
            let name = written_out_name(part);
            let p = params(&format!("__global__{part}"), &name, &macros);
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
        kernel_macros += macros.values().filter(|m| defines_kernel(m)).count();
        all_macros.extend(macros);
        expand_kernels(&top, &all_macros, &mut kernels);
    }
    // every __global__ is in a kernel-defining macro or written out: none is missed
    let written_out: usize = files
        .iter()
        .map(|(_, t)| {
            split_defines(&strip_comments(t))
                .1
                .matches("__global__")
                .count()
        })
        .sum();
    assert_eq!(
        globals,
        kernel_macros + written_out,
        "a __global__ the parser cannot place"
    );
    Sources {
        kernels,
        macros: all_macros,
        used,
        common: strip_comments(files[0].1),
    }
}

#[test]
fn every_kernel_has_one_table_entry_and_every_entry_one_kernel() {
    let s = sources();
    let mut seen = BTreeSet::new();
    for (k, _) in &s.kernels {
        assert!(
            seen.insert(k.as_str()),
            "kernel {k} defined twice in kernels/*.cu"
        );
    }
    let table: BTreeSet<&str> = Kernel::ALL.iter().map(|k| k.name()).collect();
    assert_eq!(table.len(), Kernel::ALL.len(), "a name twice in the table");
    let missing: Vec<_> = seen.difference(&table).collect();
    assert!(
        missing.is_empty(),
        "kernels without a table entry: {missing:?}"
    );
    let absent: Vec<_> = table.difference(&seen).collect();
    assert!(
        absent.is_empty(),
        "table entries no .cu file defines: {absent:?}"
    );
    assert_eq!(s.kernels.len(), 124);
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
    let model = strip_comments(
        KERNEL_FILES
            .iter()
            .find(|(n, _)| *n == "model.cu")
            .unwrap()
            .1,
    );
    for (name, _) in abi::defines() {
        if name.starts_with("RTX_UNARY_") || name.starts_with("RTX_BINARY_") {
            assert!(
                model.contains(&format!("case {name}:")),
                "no `case {name}:` in model.cu"
            );
        }
    }
}

#[test]
fn the_translation_unit_defines_before_it_checks() {
    let tu = crate::source::translation_unit();
    for (name, value) in abi::defines() {
        let def = tu.find(&format!("#define {name} {value}\n")).expect(name);
        let guard = tu.find(&format!("#ifndef {name}")).expect(name);
        assert!(def < guard, "{name} is checked before it is defined");
    }
}

#[test]
fn every_matmul_tile_names_its_kernel() {
    use MatmulTile::{T32x32, T32x64, T64x32, T64x64};
    for (f, suffix) in [(Float::F32, "f32"), (Float::F64, "f64")] {
        for tile in [T64x64, T32x64, T64x32, T32x32] {
            let (tm, tn) = (tile.tm(), tile.tn());
            assert_eq!(
                Kernel::matmul(f, tile).name(),
                format!("matmul{tm}x{tn}_{suffix}")
            );
            assert_eq!(tile.threads(), tm * tn / 16);
        }
        assert_eq!(
            Kernel::typed(Typed::MatmulDot, f).name(),
            format!("matmul_dot_{suffix}")
        );
    }
}

#[test]
fn pickers_give_the_kernels_of_old() {
    // the names the host assembled before the table, for every choice
    for (w, b) in [(Word::B4, 4), (Word::B8, 8), (Word::B16, 16)] {
        assert_eq!(Kernel::gather(w).name(), format!("gather_b{b}"));
        assert_eq!(Kernel::permute(w).name(), format!("permute_b{b}"));
        assert_eq!(
            Kernel::transpose_runs(w).name(),
            format!("transpose_runs_b{b}")
        );
        for (r, c) in [(1, 1), (5000, 3), (3, 5000), (100, 100)] {
            for force in [false, true] {
                let t = Tile::pick(r, c, w, force);
                let (tr, tc) = t.dims();
                assert_eq!(
                    Kernel::transpose(w, t).name(),
                    format!("transpose{tr}x{tc}_b{b}")
                );
            }
        }
    }
    let vecs = [
        (SumVec::F32x4, "f32x4"),
        (SumVec::F32x2, "f32x2"),
        (SumVec::F32x1, "f32x1"),
        (SumVec::F64x2, "f64x2"),
        (SumVec::F64x1, "f64x1"),
    ];
    for (v, s) in vecs {
        for (lv, l) in [(Level::Zero, "0"), (Level::Higher, "N")] {
            for (f, p) in [(ChunkSum::Batched, ""), (ChunkSum::Pipelined, "p")] {
                assert_eq!(
                    Kernel::scatter(lv, f, v).name(),
                    format!("scatter{l}{p}_{s}")
                );
            }
        }
        for (op, b) in [
            (Fused0::Read, "sum0"),
            (Fused0::SoftmaxBwd, "smb0"),
            (Fused0::GatherScale, "gss0"),
        ] {
            assert_eq!(Kernel::fused0(op, v).name(), format!("{b}_{s}"));
        }
    }
    assert_eq!(
        Kernel::typed(Typed::GatherHeadDot, Float::F64).name(),
        "gather_head_dot_f64"
    );
    assert_eq!(
        Kernel::typed(Typed::Segmax0, Float::F32).name(),
        "segmax0_f32"
    );
    assert_eq!(Word::dividing(256), Word::B16);
    assert_eq!(Word::dividing(12), Word::B4);
    assert_eq!(Word::dividing(8), Word::B8);
    assert_eq!(Tile::pick(4_211_136, 32, Word::B4, false), Tile::T128x32);
    assert_eq!(Tile::pick(32, 4_211_136, Word::B4, false), Tile::T32x128);
    assert_eq!(Tile::pick(8192, 8192, Word::B4, false), Tile::T64x64);
    assert_eq!(Tile::pick(8192, 8192, Word::B16, false), Tile::T32x32);
    assert_eq!(Tile::pick(8192, 8192, Word::B4, true), Tile::T32x32);
    // the scatter's vector: by row bytes alone when align is the row's length
    for f in 1..40usize {
        let want = if f % 4 == 0 {
            16
        } else if f % 2 == 0 {
            8
        } else {
            4
        };
        assert_eq!(SumVec::pick(DType::F32, 4 * f, f).bytes(), want);
        assert_eq!(
            SumVec::pick(DType::F64, 8 * f, f).bytes(),
            if f % 2 == 0 { 16 } else { 8 }
        );
    }
}

#[test]
fn the_parser_sees_through_pasted_names() {
    let (m, top) = split_defines(&strip_comments(
        "#define K(NAME) extern \"C\" __global__ void NAME(int x) {}\n\
         #define ALL(S) K(a_##S) \\\n K(b_##S)\n// K(c)\nALL(f32)\nK(d)\n",
    ));
    let mut out = Vec::new();
    expand_kernels(&top, &m, &mut out);
    let names: Vec<&str> = out.iter().map(|(n, _)| n.as_str()).collect();
    assert_eq!(names, ["a_f32", "b_f32", "d"]);
    assert!(out.iter().all(|(_, p)| p.len() == 1));
    let (m, top) = split_defines(
        "#define ARGS int a, int b\n\
         #define K(NAME, T) extern \"C\" __global__ void __launch_bounds__(256, 2) \\\n\
         NAME(const T* x, ARGS, f<T> y) {}\n\
         K(k, float)\n",
    );
    let mut out = Vec::new();
    expand_kernels(&top, &m, &mut out);
    assert_eq!(out.len(), 1);
    assert_eq!(out[0].0, "k");
    assert_eq!(out[0].1.len(), 4);
    let part = " void __launch_bounds__(256) direct(int a, int b) {}";
    assert_eq!(written_out_name(part), "direct");
    assert_eq!(arity(&format!("__global__{part}"), "direct", &m), 2);
}

/// The canonical spelling of a CUDA type named by `base` (no pointer, no
/// `const`): the integers by width (`u32`, `u64`, `i32`), the floats and
/// their vectors (`f32`, `f32x4`, ...), `VecT<X>::T` as the scalar of `X`, a
/// struct by its name. Panics on anything else, so a type this map lacks
/// fails the test instead of passing it.
fn canon(base: &str) -> String {
    let known = match base {
        "u32" | "unsigned" | "unsigned int" | "uint32_t" => "u32",
        "u64" | "unsigned long long" | "unsigned long long int" | "uint64_t" => "u64",
        "int" | "int32_t" => "i32",
        "float" => "f32",
        "double" => "f64",
        "float2" => "f32x2",
        "float4" => "f32x4",
        "double2" => "f64x2",
        "uint2" => "u32x2",
        "uint4" => "u32x4",
        _ => "",
    };
    if !known.is_empty() {
        return known.to_string();
    }
    if let Some(inner) = base
        .strip_prefix("VecT<")
        .and_then(|r| r.strip_suffix(">::T"))
    {
        return scalar(&canon(inner.trim()));
    }
    let ident = base.chars().all(|c| c.is_ascii_alphanumeric() || c == '_');
    assert!(
        ident && base.starts_with(|c: char| c.is_ascii_uppercase()),
        "CUDA type `{base}`: not in the map of canonical types (table_tests.rs `canon`)"
    );
    base.to_string()
}

/// The scalar of a canonical float type or vector (`f32x4` -> `f32`).
fn scalar(t: &str) -> String {
    match t {
        "f32" | "f32x2" | "f32x4" => "f32".into(),
        "f64" | "f64x2" => "f64".into(),
        _ => panic!("`{t}` is not a float type or vector"),
    }
}

/// Tokens of a parameter or type: words, `*` on its own.
fn tokens(p: &str) -> Vec<String> {
    p.replace('*', " * ")
        .split_whitespace()
        .filter(|t| !matches!(*t, "__restrict__" | "__grid_constant__"))
        .map(str::to_string)
        .collect()
}

/// `(canonical type, name)` of a parameter as kernels/*.cu writes it
/// (`const float4* __restrict__ vals` -> `("*const f32x4", "vals")`). A
/// pointer's own `const` (`T* const p`) is not part of its type here; a
/// value's `const` (`const SpanParams q`) neither.
fn cuda_param(p: &str) -> (String, String) {
    let mut t = tokens(p);
    let name = t.pop().unwrap_or_default();
    let star = t.iter().position(|x| x == "*");
    let ty = match star {
        Some(s) => {
            assert_eq!(
                t.len() - t.iter().rev().take_while(|x| *x == "const").count(),
                s + 1,
                "`{p}`: one level of pointer"
            );
            let pointee = &t[..s];
            let q = if pointee.iter().any(|x| x == "const") {
                "const"
            } else {
                "mut"
            };
            let base: Vec<&str> = pointee
                .iter()
                .map(String::as_str)
                .filter(|x| *x != "const")
                .collect();
            format!("*{q} {}", canon(&base.join(" ")))
        }
        None => {
            let base: Vec<&str> = t
                .iter()
                .map(String::as_str)
                .filter(|x| *x != "const")
                .collect();
            canon(&base.join(" "))
        }
    };
    (ty, name)
}

/// `(canonical type, name)` of every parameter of `k` as the table declares
/// it, its signature's letter resolved with the type `k` binds.
fn declared_params(k: Kernel) -> Vec<(String, String)> {
    let binding = k.binding();
    let resolve = |base: &str| -> String {
        match (base, binding) {
            (l, Some((bl, cty))) if l == bl => canon(cty),
            ("T", Some(("V", cty))) => scalar(&canon(cty)),
            ("T" | "V" | "E", _) => panic!("{}: letter {base} is not bound", k.name()),
            (t, _) => canon(t),
        }
    };
    k.signature()
        .params()
        .iter()
        .map(|(name, ty)| {
            let t = tokens(ty);
            let ty = match t.as_slice() {
                [star, q, base] if star == "*" => format!("*{q} {}", resolve(base)),
                [base] => resolve(base),
                _ => panic!(
                    "{}: parameter type `{ty}` outside the table's vocabulary",
                    k.name()
                ),
            };
            (ty, name.trim_start_matches("r#").to_string())
        })
        .collect()
}

/// Compares the table's parameters of `k` with kernels/*.cu's `cuda`
/// (as written): `Err` names the first difference of count, name or type.
fn compare(k: Kernel, cuda: &[String]) -> Result<(), String> {
    let want = declared_params(k);
    let got: Vec<(String, String)> = cuda.iter().map(|p| cuda_param(p)).collect();
    if want.len() != got.len() {
        return Err(format!(
            "{}: the table declares {} parameters, kernels/*.cu {}: {want:?} vs {got:?}",
            k.name(),
            want.len(),
            got.len()
        ));
    }
    for (i, (w, g)) in want.iter().zip(&got).enumerate() {
        if w != g {
            return Err(format!(
                "{}: parameter {i} is `{} {}` in the table ({}), `{}` in kernels/*.cu",
                k.name(),
                w.0,
                w.1,
                k.signature().name(),
                cuda[i]
            ));
        }
    }
    Ok(())
}

/// Compares every kernel of the table with the parsed `s`.
fn compare_all(s: &Sources) -> Result<(), String> {
    for &k in Kernel::ALL {
        let (_, p) = s
            .kernels
            .iter()
            .find(|(name, _)| name == k.name())
            .ok_or_else(|| format!("{} not in kernels/*.cu", k.name()))?;
        compare(k, p)?;
    }
    Ok(())
}

#[test]
fn every_kernel_takes_the_parameter_names_and_types_the_table_says() {
    if let Err(e) = compare_all(&sources()) {
        panic!("{e}");
    }
}

#[test]
fn every_kernel_binds_its_signatures_letter_to_a_type_of_its_kind() {
    for &k in Kernel::ALL {
        let sig = k.signature();
        assert_eq!(
            k.binding().map(|b| b.0),
            sig.letter(),
            "{}: binding vs {}",
            k.name(),
            sig.name()
        );
        // the typed launchers of T and V check the element at run time
        assert_eq!(k.dtype().is_some(), sig.is_float(), "{}", k.name());
    }
    // every signature has a kernel
    for sig in Signature::ALL {
        assert!(
            Kernel::ALL.iter().any(|k| k.signature() == *sig),
            "{} unused",
            sig.name()
        );
    }
}

#[test]
fn cuda_parameters_are_read_canonically() {
    let cases = [
        ("const float4* __restrict__ vals", "*const f32x4", "vals"),
        ("const u32 *__restrict__ pos", "*const u32", "pos"),
        ("unsigned long long n", "u64", "n"),
        ("uint64_t n", "u64", "n"),
        ("unsigned int k", "u32", "k"),
        ("int i", "i32", "i"),
        ("double* out", "*mut f64", "out"),
        ("const VecT<double2>::T* __restrict__ w", "*const f64", "w"),
        ("const __grid_constant__ TensorMap min", "TensorMap", "min"),
        ("const SpanParams q", "SpanParams", "q"),
        ("U3* __restrict__ sums", "*mut U3", "sums"),
    ];
    for (p, ty, name) in cases {
        assert_eq!(cuda_param(p), (ty.to_string(), name.to_string()), "{p}");
    }
}

/// The kernels of the one source `text` (a header-less kernels file).
fn parse_one(text: &str) -> Sources {
    parse(&[("common.cuh", ""), ("doctored.cu", text)])
}

#[test]
fn the_comparison_catches_a_doctored_prototype() {
    // gather_b16 as index.cu defines it (by a macro binding V), and
    // index_shift as plan.cu writes it out
    let gather = "#define RTX_GATHER(NAME, V) \\\n\
        extern \"C\" __global__ void __launch_bounds__(RTX_BLOCK) \\\n\
        NAME(const V* __restrict__ src, V* __restrict__ out, const u32* __restrict__ idx, \\\n\
             u64 nrows, u64 W, u32 lanes_log2) {}\n\
        RTX_GATHER(gather_b16, uint4)\n";
    let shift = "extern \"C\" __global__ void __launch_bounds__(RTX_BLOCK)\n\
        index_shift(const u32* __restrict__ src, u64 n, u32 offset, u32* __restrict__ out) {}\n";
    let check = |text: &str, k: Kernel| {
        let s = parse_one(text);
        assert_eq!(s.kernels.len(), 1);
        assert_eq!(s.kernels[0].0, k.name());
        compare(k, &s.kernels[0].1)
    };
    assert_eq!(check(gather, Kernel::GatherB16), Ok(()));
    assert_eq!(check(shift, Kernel::IndexShift), Ok(()));
    let doctored = [
        // two u64 parameters swapped: the same types, the names differ
        (
            gather.replace("u64 nrows, u64 W", "u64 W, u64 nrows"),
            Kernel::GatherB16,
            "parameter 3",
        ),
        // a type: u32 -> u64
        (
            gather.replace("u32 lanes_log2", "u64 lanes_log2"),
            Kernel::GatherB16,
            "parameter 5",
        ),
        // the bound vector: uint4 -> uint2
        (
            gather.replace("(gather_b16, uint4)", "(gather_b16, uint2)"),
            Kernel::GatherB16,
            "parameter 0",
        ),
        // a pointer's constness
        (
            gather.replace("const u32* __restrict__ idx", "u32* __restrict__ idx"),
            Kernel::GatherB16,
            "parameter 2",
        ),
        // one parameter less
        (
            gather.replace(", u32 lanes_log2", ""),
            Kernel::GatherB16,
            "declares 6 parameters",
        ),
        // one more
        (
            gather.replace("u32 lanes_log2", "u32 lanes_log2, u32 x"),
            Kernel::GatherB16,
            "declares 6 parameters",
        ),
        // two parameters of different types swapped
        (
            shift.replace("u64 n, u32 offset", "u32 offset, u64 n"),
            Kernel::IndexShift,
            "parameter 1",
        ),
        // a pointee's type: u32 -> int
        (
            shift.replace("u32* __restrict__ out", "int* __restrict__ out"),
            Kernel::IndexShift,
            "parameter 3",
        ),
        // a pointer for an integer
        (
            shift.replace("u64 n,", "u64* n,"),
            Kernel::IndexShift,
            "parameter 1",
        ),
    ];
    for (text, k, what) in doctored {
        let err = check(&text, k).expect_err(&text);
        assert!(err.starts_with(k.name()) && err.contains(what), "{err}");
    }
}
