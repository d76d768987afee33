//! The parameter check of the Rust/CUDA boundary: every kernel's parameters
//! as kernels/*.cu declares them (parsed by the parent module) against the
//! table's signatures (`table.rs`), by name, canonical type, order and
//! count; and the proof that the comparison catches a doctored prototype.

use super::*;

/// The canonical spelling of a CUDA type named by `base` (no pointer, no
/// `const`): the integers by width (`u32`, `u64`, `i32`), the floats and
/// their vectors (`f32`, `f32x4`, ...), `u16`, the half storage types of
/// kernels/common.cuh by their names (`bf16`, `bf16x4`, `f16x2`, ...),
/// `VecT<X>::T` as the scalar of `X`, a struct by its name. Panics on anything else, so a type this map lacks
/// fails the test instead of passing it.
fn canon(base: &str) -> String {
    let known = match base {
        "u32" | "unsigned" | "unsigned int" | "uint32_t" => "u32",
        "u64" | "unsigned long long" | "unsigned long long int" | "uint64_t" => "u64",
        "int" | "int32_t" => "i32",
        "float" | "f32" => "f32",
        "double" | "f64" => "f64",
        "u16" | "unsigned short" => "u16",
        "bf16" | "bf16x2" | "bf16x4" | "bf16x8" | "f16" | "f16x2" | "f16x4" | "f16x8" => base,
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
        "bf16" | "bf16x2" | "bf16x4" | "bf16x8" => "bf16".into(),
        "f16" | "f16x2" | "f16x4" | "f16x8" => "f16".into(),
        _ => panic!("`{t}` is not a float type or vector"),
    }
}

/// The type a kernel of the float `t` computes in: f32 for the half types.
fn acc(t: &str) -> String {
    match t {
        "bf16" | "f16" => "f32".into(),
        _ => t.into(),
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
            ("A", Some((_, cty))) => acc(&scalar(&canon(cty))),
            ("T" | "V" | "E" | "A", _) => panic!("{}: letter {base} is not bound", k.name()),
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
        (
            "Level0Counts* __restrict__ sums",
            "*mut Level0Counts",
            "sums",
        ),
    ];
    for (p, ty, name) in cases {
        assert_eq!(cuda_param(p), (ty.to_string(), name.to_string()), "{p}");
    }
}

/// The kernel `k` of the one source `text` (a header-less kernels file).
fn parse_one(text: &str, k: Kernel) -> Sources {
    parse(&[("common.cuh", ""), ("doctored.cu", text)], &[k])
}

#[test]
fn the_comparison_catches_a_doctored_prototype() {
    // gather_b16 as index.cu defines it (by a macro the table's entry
    // instantiates, binding V), and
    // index_shift as plan.cu writes it out
    let gather = "#define RTX_GATHER(NAME, V) \\\n\
        extern \"C\" __global__ void __launch_bounds__(RTX_BLOCK) \\\n\
        NAME(const V* __restrict__ src, V* __restrict__ out, const u32* __restrict__ idx, \\\n\
             u64 nrows, u64 W, u32 lanes_log2) {}\n\
        // @kernels RTX_GATHER\n";
    let shift = "extern \"C\" __global__ void __launch_bounds__(RTX_BLOCK)\n\
        index_shift(const u32* __restrict__ src, u64 n, u32 offset, u32* __restrict__ out) {}\n";
    let check = |text: &str, k: Kernel| {
        let s = parse_one(text, k);
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
        // a pointee of the bound vector: uint4 -> uint2
        (
            gather.replace("const V* __restrict__ src", "const uint2* __restrict__ src"),
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
