//! The disagreement tests of the Rust/CUDA boundary: kernels/*.cu are parsed
//! as text (comments stripped, `#define`s collected, the kernel-defining macro
//! invocations expanded) and compared with [`Kernel`] and
//! [`crate::abi::defines`]; `table_sig_tests.rs` compares every kernel's
//! parameters with the table's signatures.

use std::collections::{BTreeMap, BTreeSet};

use rtx_backend::DType;

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
        kernel_macros += macros.values().filter(|m| defines_kernel(m)).count();
        // the macros of this file and of the files before it (the header first)
        all_macros.extend(macros);
        // a kernel written out directly, outside any macro
        for part in top.split("__global__").skip(1) {
            let name = written_out_name(part);
            let p = params(&format!("__global__{part}"), &name, &all_macros);
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
    assert_eq!(s.kernels.len(), 284);
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
    for (f, suffix) in [
        (Float::F32, "f32"),
        (Float::F64, "f64"),
        (Float::Bf16, "bf16"),
        (Float::F16, "f16"),
    ] {
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
fn half_pickers_give_kernels_of_their_element_and_vector() {
    // rows of 2-byte elements: the widest word dividing the row, 2 bytes alone
    // for odd rows; scatter and conversion kernels bind the half type they say
    for (bytes, w) in [(2, Word::B2), (6, Word::B2), (4, Word::B4), (12, Word::B4)] {
        assert_eq!(Word::dividing(bytes), w, "{bytes} bytes");
        assert_eq!(
            Kernel::gather(w).binding().map(|b| b.1),
            Some(match w {
                Word::B2 => "u16",
                _ => "u32",
            })
        );
    }
    for (f, v, cty) in [
        (1, HalfVec::X1, ""),
        (6, HalfVec::X2, "x2"),
        (12, HalfVec::X4, "x4"),
        (64, HalfVec::X8, "x8"),
    ] {
        assert_eq!(HalfVec::pick(f), v);
        // levels past 0 sum f32 scratch in float4 lanes at most
        let scratch = if v == HalfVec::X8 { HalfVec::X4 } else { v };
        assert_eq!(HalfVec::pick_scratch(f), scratch, "f = {f}");
        assert!(f.is_multiple_of(scratch.elems()));
        assert_eq!(HalfVec::pick_level0(f, ChunkSum::Batched), v, "f = {f}");
        assert_eq!(
            HalfVec::pick_level0(f, ChunkSum::Pipelined),
            scratch,
            "f = {f}"
        );
        // rows past 32 x4 vectors keep x8 in the latency form too
        for (wide, want) in [(128, HalfVec::X4), (136, HalfVec::X8), (256, HalfVec::X8)] {
            assert_eq!(
                HalfVec::pick_level0(wide, ChunkSum::Pipelined),
                want,
                "f = {wide}"
            );
        }
        for (dt, h) in [(DType::BF16, Half::Bf16), (DType::F16, Half::F16)] {
            assert_eq!(Half::of(dt), Some(h));
            for level in [Level::Zero, Level::Higher] {
                for form in [ChunkSum::Batched, ChunkSum::Pipelined] {
                    let k = Kernel::scatter_half(level, form, h, v);
                    assert_eq!(k.dtype(), Some(dt), "{}", k.name());
                    assert_eq!(
                        k.binding().map(|b| b.1.to_string()),
                        Some(format!("{}{cty}", dt.name()))
                    );
                    let zero = k.name().starts_with("scatter0");
                    assert_eq!(zero, level == Level::Zero, "{}", k.name());
                    assert_eq!(k.name().contains("p_"), form == ChunkSum::Pipelined);
                }
            }
            for widen in [false, true] {
                let k = Kernel::convert_half(h, widen);
                assert_eq!(k.dtype(), Some(dt));
                assert_eq!(k.name().starts_with("widen"), widen);
            }
        }
    }
    assert_eq!(Half::of(DType::F32), None);
    assert_eq!(Half::of(DType::F64), None);
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
        assert_eq!(
            SumVec::pick(DType::F32, 4 * f, f, "test").unwrap().bytes(),
            want
        );
        assert_eq!(
            SumVec::pick(DType::F64, 8 * f, f, "test").unwrap().bytes(),
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

/// The segment families' half kernels: the typed pickers and the fused
/// level 0's give kernels of the launcher's signature, of the half element,
/// named for it; the level-0 vector never straddles a head.
#[test]
fn segment_pickers_give_half_kernels_of_the_launchers_signature() {
    use Signature as S;
    let typed = [
        (Typed::Segmax0, S::Segmax0),
        (Typed::Segmax, S::Segmax),
        (Typed::SoftmaxExp, S::SoftmaxExp),
        (Typed::SoftmaxDiv, S::SoftmaxDiv),
        (Typed::SoftmaxBwd, S::SoftmaxBwd),
    ];
    for (t, h, dt) in [
        (Float::Bf16, Half::Bf16, DType::BF16),
        (Float::F16, Half::F16, DType::F16),
    ] {
        for (family, sig) in typed {
            let k = Kernel::typed(family, t);
            assert_eq!((k.signature(), k.dtype()), (sig, Some(dt)), "{}", k.name());
            assert_eq!(k.name(), format!("{}_{}", family.name(), dt.name()));
        }
        for (op, sig, base) in [
            (Fused0::Read, S::Sum0, "sum0"),
            (Fused0::Add, S::Sum0, "sum0a"),
            (Fused0::SoftmaxBwd, S::Smb0, "smb0"),
            (Fused0::GatherScale, S::Gss0, "gss0"),
        ] {
            for v in [HalfVec::X8, HalfVec::X4, HalfVec::X2, HalfVec::X1] {
                let k = Kernel::fused0_half(op, h, v);
                assert_eq!((k.signature(), k.dtype()), (sig, Some(dt)), "{}", k.name());
                assert_eq!(k.name(), format!("{base}_{}x{}", dt.name(), v.elems()));
            }
        }
    }
    // (row elements, head channels) -> halves per vector
    for (f, align, n) in [
        (64, 64, 8),
        (64, 16, 8),
        (48, 12, 4),
        (24, 6, 2),
        (12, 3, 1),
        (6, 6, 2),
        (8, 2, 2),
        (7, 7, 1),
    ] {
        let v = HalfVec::pick_aligned(f, align);
        assert_eq!(v.elems(), n, "f {f}, align {align}");
        assert!(f % n == 0 && align % n == 0);
    }
}

#[path = "table_sig_tests.rs"]
mod signatures;

/// The pickers give kernels of the signature and element their launchers
/// are called with (a typed launcher refuses any other at run time, so a
/// mismatch here would be an error on the device).
#[test]
fn pickers_give_kernels_of_the_launchers_signature_and_element() {
    use Signature as S;
    let typed = [
        (Typed::Unary, S::Unary),
        (Typed::UnaryBwd, S::UnaryBwd),
        (Typed::Binary, S::Binary),
        (Typed::Axpy, S::Axpy),
        (Typed::SumBiasRelu, S::SumBiasRelu),
        (Typed::GatherAdd, S::GatherAdd),
        (Typed::HeadScale, S::HeadScale),
        (Typed::HeadDot, S::HeadDot),
        (Typed::GatherHeadDot, S::GatherHeadDot),
        (Typed::ReduceRows, S::ReduceRows),
        (Typed::HeadScaleRows, S::HeadScaleRows),
        (Typed::MatmulDot, S::Matmul),
        (Typed::Segmax0, S::Segmax0),
        (Typed::Segmax, S::Segmax),
        (Typed::SoftmaxExp, S::SoftmaxExp),
        (Typed::SoftmaxDiv, S::SoftmaxDiv),
        (Typed::SoftmaxBwd, S::SoftmaxBwd),
    ];
    let train = [
        S::Dropout,
        S::CrossEntropy,
        S::Regression,
        S::Adam,
        S::Sgd,
        S::LnProbe,
    ];
    for t in [Float::F32, Float::F64, Float::Bf16, Float::F16] {
        for (family, sig) in Train::ALL.into_iter().zip(train) {
            let k = Kernel::train(family, t);
            assert_eq!(
                (k.signature(), k.dtype()),
                (sig, Some(t.dtype())),
                "{}",
                k.name()
            );
            assert_eq!(k.name(), format!("{}_{}", family.name(), t.dtype().name()));
        }
        for (family, sig) in typed {
            let k = Kernel::typed(family, t);
            assert_eq!(
                (k.signature(), k.dtype()),
                (sig, Some(t.dtype())),
                "{}",
                k.name()
            );
        }
        for tile in [
            MatmulTile::T64x64,
            MatmulTile::T32x64,
            MatmulTile::T64x32,
            MatmulTile::T32x32,
        ] {
            let k = Kernel::matmul(t, tile);
            assert_eq!(
                (k.signature(), k.dtype()),
                (S::Matmul, Some(t.dtype())),
                "{}",
                k.name()
            );
        }
    }
    let vecs = [
        (SumVec::F32x4, DType::F32),
        (SumVec::F32x2, DType::F32),
        (SumVec::F32x1, DType::F32),
        (SumVec::F64x2, DType::F64),
        (SumVec::F64x1, DType::F64),
    ];
    for (v, d) in vecs {
        for level in [Level::Zero, Level::Higher] {
            for form in [ChunkSum::Batched, ChunkSum::Pipelined] {
                let k = Kernel::scatter(level, form, v);
                assert_eq!(
                    (k.signature(), k.dtype()),
                    (S::Scatter, Some(d)),
                    "{}",
                    k.name()
                );
            }
        }
        for (op, sig) in [
            (Fused0::Read, S::Sum0),
            (Fused0::Add, S::Sum0),
            (Fused0::SoftmaxBwd, S::Smb0),
            (Fused0::GatherScale, S::Gss0),
        ] {
            let k = Kernel::fused0(op, v);
            assert_eq!((k.signature(), k.dtype()), (sig, Some(d)), "{}", k.name());
        }
    }
    for w in [Word::B4, Word::B8, Word::B16] {
        for (k, sig) in [
            (Kernel::gather(w), S::Gather),
            (Kernel::transpose_runs(w), S::TransposeRuns),
            (Kernel::permute(w), S::Permute),
            (Kernel::transpose(w, Tile::T32x32), S::TransposeTiled),
        ] {
            assert_eq!((k.signature(), k.dtype()), (sig, None), "{}", k.name());
        }
    }
    for kind in [SpanKind::Planes, SpanKind::Rows, SpanKind::Cols] {
        for w in [Word::B4, Word::B8] {
            let k = Kernel::transpose_span(kind, w);
            assert_eq!(k.signature(), S::TransposeSpan, "{}", k.name());
        }
    }
    assert_eq!(Kernel::TransposeBulkB4.signature(), S::TransposeBulk);
}
