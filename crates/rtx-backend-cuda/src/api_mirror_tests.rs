//! The feature-off stub (`stub.rs`) stands in for the device code with the
//! same public surface, so downstream code compiles the same either way.
//! Nothing but this test checks that: it parses `stub.rs` and every file of
//! the other files of `src/` (read through the run-time `CARGO_MANIFEST_DIR`) and compares
//! the public methods of the public types, signature by signature (parameter
//! names aside: the stub's are `_`-prefixed), and the traits they implement.

use std::collections::{BTreeMap, BTreeSet};
use std::path::{Path, PathBuf};

use syn::{FnArg, ImplItem, Item, Pat, Signature, Type, Visibility};

/// The public surface of some files: public methods by `(type, name)`, the
/// traits implemented by `(trait, type)` (derives included).
#[derive(Default)]
struct Surface {
    methods: BTreeMap<(String, String), (Signature, PathBuf)>,
    traits: BTreeSet<(String, String)>,
}

/// The last identifier of a type path (`CudaBuffer<T>` -> `CudaBuffer`).
fn type_name(t: &Type) -> Option<String> {
    match t {
        Type::Path(p) => p.path.segments.last().map(|s| s.ident.to_string()),
        _ => None,
    }
}

/// `sig` with every parameter pattern replaced by `_`: names do not matter.
fn unnamed(mut sig: Signature) -> Signature {
    for arg in &mut sig.inputs {
        if let FnArg::Typed(t) = arg {
            *t.pat = Pat::Verbatim(Default::default());
        }
    }
    sig
}

impl Surface {
    /// Adds the items of `file` whose self type is one of `types`.
    fn add(&mut self, path: &Path, types: &BTreeSet<String>) {
        let text =
            std::fs::read_to_string(path).unwrap_or_else(|e| panic!("{}: {e}", path.display()));
        let file = syn::parse_file(&text).unwrap_or_else(|e| panic!("{}: {e}", path.display()));
        for item in file.items {
            match item {
                Item::Impl(imp) => {
                    let Some(ty) = type_name(&imp.self_ty).filter(|t| types.contains(t)) else {
                        continue;
                    };
                    if let Some((tr, _)) = &imp.trait_ {
                        let tr = tr
                            .segments
                            .last()
                            .map(|s| s.ident.to_string())
                            .unwrap_or_default();
                        self.traits.insert((tr, ty));
                        continue;
                    }
                    for it in imp.items {
                        if let ImplItem::Fn(f) = it
                            && matches!(f.vis, Visibility::Public(_))
                        {
                            let key = (ty.clone(), f.sig.ident.to_string());
                            let shown = path
                                .strip_prefix(src().parent().unwrap_or(&src()))
                                .unwrap_or(path);
                            let prev = self
                                .methods
                                .insert(key.clone(), (unnamed(f.sig), shown.to_path_buf()));
                            assert!(prev.is_none(), "{key:?} defined twice");
                        }
                    }
                }
                Item::Struct(s) if types.contains(&s.ident.to_string()) => {
                    for a in &s.attrs {
                        if a.path().is_ident("derive") {
                            a.parse_nested_meta(|m| {
                                let tr = m.path.segments.last().map(|s| s.ident.to_string());
                                self.traits
                                    .insert((tr.unwrap_or_default(), s.ident.to_string()));
                                Ok(())
                            })
                            .expect("a derive list");
                        }
                    }
                }
                _ => {}
            }
        }
    }
}

/// The crate's `src/`, through the run-time manifest directory.
fn src() -> PathBuf {
    PathBuf::from(std::env::var("CARGO_MANIFEST_DIR").expect("cargo sets CARGO_MANIFEST_DIR"))
        .join("src")
}

/// The public types the stub defines (what lib.rs exports from either side).
fn public_types(stub: &Path) -> BTreeSet<String> {
    let text = std::fs::read_to_string(stub).expect("stub.rs");
    let file = syn::parse_file(&text).expect("stub.rs parses");
    file.items
        .iter()
        .filter_map(|i| match i {
            Item::Struct(s) if matches!(s.vis, Visibility::Public(_)) => Some(s.ident.to_string()),
            _ => None,
        })
        .collect()
}

/// Traits only one side may implement: the device backend releases its
/// device when dropped; the stub has nothing to release.
const ONE_SIDED_TRAITS: &[&str] = &["Drop"];

fn compare(stub: &Surface, device: &Surface) -> Vec<String> {
    let mut diffs = Vec::new();
    for (key, (sig, path)) in &stub.methods {
        match device.methods.get(key) {
            None => diffs.push(format!(
                "{}::{} is in {} but in no device file of src/",
                key.0,
                key.1,
                path.display()
            )),
            Some((d, dpath)) if d != sig => diffs.push(format!(
                "{}::{}: the signatures differ between {} and {}",
                key.0,
                key.1,
                path.display(),
                dpath.display()
            )),
            Some(_) => {}
        }
    }
    for (key, (_, path)) in &device.methods {
        if !stub.methods.contains_key(key) {
            diffs.push(format!(
                "{}::{} is in {} but not in src/stub.rs",
                key.0,
                key.1,
                path.display()
            ));
        }
    }
    let one_sided = |t: &&(String, String)| !ONE_SIDED_TRAITS.contains(&t.0.as_str());
    for t in stub
        .traits
        .symmetric_difference(&device.traits)
        .filter(one_sided)
    {
        let side = if stub.traits.contains(t) {
            "src/stub.rs"
        } else {
            "the device code"
        };
        diffs.push(format!("impl {} for {} only in {side}", t.0, t.1));
    }
    diffs
}

/// The `.rs` files under `dir`, at any depth.
fn rust_files(dir: &Path, out: &mut Vec<PathBuf>) {
    for e in std::fs::read_dir(dir).unwrap_or_else(|e| panic!("{}: {e}", dir.display())) {
        let p = e.expect("a directory entry").path();
        if p.is_dir() {
            rust_files(&p, out);
        } else if p.extension().is_some_and(|e| e == "rs") {
            out.push(p);
        }
    }
}

fn device_surface(types: &BTreeSet<String>) -> Surface {
    let mut device = Surface::default();
    let mut files = Vec::new();
    rust_files(&src(), &mut files);
    files.retain(|f| !f.ends_with("stub.rs") && !f.ends_with("api_mirror_tests.rs"));
    files.sort();
    for f in &files {
        device.add(f, types);
    }
    device
}

#[test]
fn the_stub_has_the_public_api_of_the_device_code() {
    let stub_path = src().join("stub.rs");
    let types = public_types(&stub_path);
    assert!(
        types.contains("CudaBackend") && types.contains("CudaIndex"),
        "{types:?}"
    );
    let mut stub = Surface::default();
    stub.add(&stub_path, &types);
    let device = device_surface(&types);
    assert!(
        stub.methods.len() > 30,
        "{} stub methods",
        stub.methods.len()
    );
    let diffs = compare(&stub, &device);
    assert!(
        diffs.is_empty(),
        "the stub (src/stub.rs) must have the device code's public API, signature for signature:\n{}",
        diffs.join("\n")
    );
}

#[test]
fn the_mirror_check_sees_a_method_on_one_side_only_or_changed() {
    let dir = std::env::temp_dir().join(format!("rtx-api-mirror-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let (a, b, c) = (dir.join("a.rs"), dir.join("b.rs"), dir.join("c.rs"));
    std::fs::write(&a, "pub struct CudaBackend {}\nimpl CudaBackend {\n    pub fn f(&self, _x: u32) -> u64 { 0 }\n    pub fn g(&self) {}\n    fn private(&self) {}\n}\nimpl Foo for CudaBackend {}\n").unwrap();
    std::fs::write(&b, "impl CudaBackend {\n    pub fn f(&self, x: u32) -> u64 { x as u64 }\n    pub(crate) fn g(&self) {}\n}\nimpl Foo for CudaBackend {}\n").unwrap();
    std::fs::write(
        &c,
        "impl CudaBackend {\n    pub fn f(&self, x: u64) -> u64 { x }\n    pub fn g(&self) {}\n}\n",
    )
    .unwrap();
    let types = public_types(&a);
    let surface = |p: &Path| {
        let mut s = Surface::default();
        s.add(p, &types);
        s
    };
    let (sa, sb, sc) = (surface(&a), surface(&b), surface(&c));
    // names aside, f agrees; g is public on one side only
    let d = compare(&sa, &sb);
    assert_eq!(d.len(), 1, "{d:?}");
    assert!(d[0].starts_with("CudaBackend::g is in"), "{d:?}");
    // f's parameter type differs; the trait is implemented on one side only
    let d = compare(&sa, &sc);
    assert_eq!(d.len(), 2, "{d:?}");
    assert!(
        d[0].contains("CudaBackend::f: the signatures differ"),
        "{d:?}"
    );
    assert!(
        d[1].contains("impl Foo for CudaBackend only in src/stub.rs"),
        "{d:?}"
    );
    std::fs::remove_dir_all(&dir).ok();
}
