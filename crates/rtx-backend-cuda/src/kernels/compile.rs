//! Compiling the kernels with NVRTC for the device's own architecture, with
//! an on-disk cache of the CUBIN.
//!
//! The disk cache lives in `$RTX_CUDA_CACHE_DIR`, else
//! `$XDG_CACHE_HOME/rtx/cubin`, else `$HOME/.cache/rtx/cubin`; set
//! `RTX_CUDA_DISK_CACHE=0` to disable it. A file's name carries a hash of the
//! source, the options, the architecture, the driver and the NVRTC version, so
//! any change compiles anew; files are written atomically (temp + rename), and
//! one that fails to load is recompiled and replaced.

use std::ffi::{CString, c_char, c_int};
use std::path::PathBuf;
use std::sync::Arc;

use cudarc::driver::{CudaContext, CudaFunction, CudaModule};
use cudarc::nvrtc::{Ptx, result as nvrtc, sys as nvrtc_sys};

use crate::error::{Error, Result};
use crate::kernels::source::{fnv1a, translation_unit};
use crate::kernels::table::Kernel;

/// The loaded module and its entry points, one per [`Kernel`].
#[derive(Debug)]
pub(crate) struct Kernels {
    _module: Arc<CudaModule>,
    /// `funcs[k as usize]` is kernel `k` (loaded in the order of [`Kernel::ALL`]).
    funcs: Vec<CudaFunction>,
    /// Where the CUBIN came from (for logs and tests).
    pub origin: Origin,
}

/// How the module was obtained.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Origin {
    /// Compiled by NVRTC in this process.
    Compiled,
    /// Read from the disk cache.
    DiskCache,
}

impl Kernels {
    /// The entry point of `k`.
    pub fn get(&self, k: Kernel) -> &CudaFunction {
        // every kernel was loaded, in the order of Kernel::ALL (load below)
        &self.funcs[k as usize]
    }
}

/// NVRTC options for `arch` (e.g. `sm_90`).
pub(crate) fn options(arch: &str) -> Vec<String> {
    vec![
        format!("--gpu-architecture={arch}"),
        "--std=c++17".into(),
        // scatter-add's adds must stay plain round-to-nearest adds
        "--fmad=false".into(),
        "--ftz=false".into(),
        "--prec-div=true".into(),
        "-lineinfo".into(),
    ]
}

/// NVRTC's version as `(major, minor)`.
pub(crate) fn nvrtc_version() -> Result<(i32, i32)> {
    let (mut major, mut minor): (c_int, c_int) = (0, 0);
    // SAFETY: both pointers are valid for writes of one c_int each.
    unsafe { nvrtc_sys::nvrtcVersion(&mut major, &mut minor) }.result()?;
    Ok((major, minor))
}

/// Compiles the kernels for `arch` and returns the CUBIN.
///
/// # Errors
/// [`Error::Compile`] with NVRTC's log; [`Error::Nvrtc`] for other NVRTC failures.
pub(crate) fn compile_cubin(arch: &str) -> Result<Vec<u8>> {
    let src = CString::new(translation_unit()).expect("kernel sources contain no NUL");
    let opts = options(arch);
    let prog = nvrtc::create_program(&src, Some(c"rtx_kernels.cu"))?;
    /// Destroys the program on every path.
    struct Prog(nvrtc_sys::nvrtcProgram);
    impl Drop for Prog {
        fn drop(&mut self) {
            // SAFETY: self.0 came from create_program and is destroyed only here.
            let _ = unsafe { nvrtc::destroy_program(self.0) };
        }
    }
    let prog = Prog(prog);
    // SAFETY: prog.0 is a live program; the options are valid C strings.
    if let Err(e) = unsafe { nvrtc::compile_program(prog.0, &opts) } {
        // SAFETY: prog.0 is a live program that has been compiled (and failed).
        let log = unsafe { nvrtc::get_program_log(prog.0) }
            .map(|raw| {
                let bytes: Vec<u8> = raw
                    .iter()
                    .take_while(|&&c| c != 0)
                    .map(|&c| c as u8)
                    .collect();
                String::from_utf8_lossy(&bytes).into_owned()
            })
            .unwrap_or_else(|le| format!("(no log: {le:?})"));
        return Err(Error::Compile {
            arch: arch.into(),
            options: opts,
            log,
            nvrtc: e,
        });
    }
    let mut size = 0usize;
    // SAFETY: prog.0 compiled successfully; size is valid for one write.
    unsafe { nvrtc_sys::nvrtcGetCUBINSize(prog.0, &mut size) }.result()?;
    let mut cubin = vec![0u8; size];
    // SAFETY: cubin has exactly the size NVRTC reported for this program.
    unsafe { nvrtc_sys::nvrtcGetCUBIN(prog.0, cubin.as_mut_ptr().cast::<c_char>()) }.result()?;
    Ok(cubin)
}

/// The disk cache directory, or `None` when disabled.
pub(crate) fn disk_cache_dir() -> Option<PathBuf> {
    if std::env::var_os("RTX_CUDA_DISK_CACHE").is_some_and(|v| v == "0") {
        return None;
    }
    if let Some(d) = std::env::var_os("RTX_CUDA_CACHE_DIR") {
        return Some(PathBuf::from(d));
    }
    let base = std::env::var_os("XDG_CACHE_HOME")
        .map(PathBuf::from)
        .or_else(|| std::env::var_os("HOME").map(|h| PathBuf::from(h).join(".cache")))?;
    Some(base.join("rtx").join("cubin"))
}

/// The cache file for `arch` on this driver and NVRTC.
fn cache_file(dir: &std::path::Path, arch: &str, driver: i32) -> Result<PathBuf> {
    let (maj, min) = nvrtc_version()?;
    let src = translation_unit();
    let opts = options(arch).join(" ");
    let key = fnv1a(&[
        src.as_bytes(),
        opts.as_bytes(),
        arch.as_bytes(),
        &driver.to_le_bytes(),
        &maj.to_le_bytes(),
        &min.to_le_bytes(),
    ]);
    Ok(dir.join(format!("rtx-kernels-{arch}-{key:016x}.cubin")))
}

/// Writes `bytes` to `path` atomically; errors are ignored (the cache is an optimisation).
fn write_atomic(path: &std::path::Path, bytes: &[u8]) {
    let Some(dir) = path.parent() else { return };
    if std::fs::create_dir_all(dir).is_err() {
        return;
    }
    let tmp = dir.join(format!(
        ".{}.{}.tmp",
        path.file_name().and_then(|n| n.to_str()).unwrap_or("cubin"),
        std::process::id()
    ));
    if std::fs::write(&tmp, bytes).is_ok() && std::fs::rename(&tmp, path).is_err() {
        let _ = std::fs::remove_file(&tmp);
    }
}

fn load(ctx: &Arc<CudaContext>, cubin: Vec<u8>, origin: Origin) -> Result<Kernels> {
    let module = ctx.load_module(Ptx::from_binary(cubin))?;
    let funcs = Kernel::ALL
        .iter()
        .map(|k| {
            module
                .load_function(k.name())
                .map_err(|source| Error::MissingKernel {
                    name: k.name(),
                    source,
                })
        })
        .collect::<Result<Vec<_>>>()?;
    Ok(Kernels {
        _module: module,
        funcs,
        origin,
    })
}

/// Loads the kernels into `ctx`: from the disk cache when a valid entry
/// exists, else compiled by NVRTC (and stored in the cache).
///
/// # Errors
/// Compile and driver errors.
pub(crate) fn load_kernels(ctx: &Arc<CudaContext>, arch: &str, driver: i32) -> Result<Kernels> {
    let file = match disk_cache_dir() {
        Some(dir) => Some(cache_file(&dir, arch, driver)?),
        None => None,
    };
    if let Some(f) = &file
        && let Ok(bytes) = std::fs::read(f)
        && let Ok(k) = load(ctx, bytes, Origin::DiskCache)
    {
        return Ok(k);
    }
    let cubin = compile_cubin(arch)?;
    if let Some(f) = &file {
        write_atomic(f, &cubin);
    }
    load(ctx, cubin, Origin::Compiled)
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Needs NVRTC (no device): on the GPU host, or here with libnvrtc on the loader path.
    #[test]
    fn kernels_compile_for_hopper() {
        // SAFETY: only tries to dlopen the candidate library names.
        let present = unsafe { nvrtc_sys::is_culib_present() };
        assert!(
            present,
            "this test needs NVRTC (libnvrtc.so.13) on the loader path"
        );
        let cubin = compile_cubin("sm_90").unwrap_or_else(|e| panic!("{e}"));
        assert!(cubin.starts_with(b"\x7fELF"), "a CUBIN is an ELF image");
    }

    #[test]
    fn compile_errors_keep_the_log() {
        // SAFETY: only tries to dlopen the candidate library names.
        let present = unsafe { nvrtc_sys::is_culib_present() };
        assert!(
            present,
            "this test needs NVRTC (libnvrtc.so.13) on the loader path"
        );
        let e = compile_cubin("sm_1").unwrap_err();
        let Error::Compile { log, .. } = &e else {
            panic!("want a compile error, got {e}")
        };
        assert!(!log.is_empty() || e.to_string().contains("sm_1"), "{e}");
    }
}
