//! Is there a usable CUDA driver and device here? Answered in-process, without
//! panicking, by loading the driver library with `libloading` and asking it.
//!
//! The probe mirrors what the backend's test processes will meet: cudarc (with
//! `dynamic-loading`) opens the same library, so a probe that fails here means
//! every GPU test would fail there. Each way of failing is its own
//! [`NoDevice`] variant with a plain-words message.
//!
//! The library the probe loads can be overridden with the environment variable
//! [`LIBCUDA_ENV`] (`RTX_GPU_TEST_LIBCUDA=/path/to/libcuda.so.1`): for a driver
//! outside the loader path, and for tests (a nonexistent path, or a fake
//! driver). It only affects the probe, not the test processes.

use std::ffi::{CStr, c_char, c_int, c_uint};
use std::fmt;
use std::path::{Path, PathBuf};

/// Environment variable naming the driver library the probe loads instead of
/// the platform default ([`default_libraries`]). Empty means unset.
pub const LIBCUDA_ENV: &str = "RTX_GPU_TEST_LIBCUDA";

/// The lowest driver API version (`cuDriverGetVersion`, 1000 * major + 10 *
/// minor) the CUDA backend can use: it is built with cudarc's `cuda-13000`
/// feature (root `Cargo.toml`), which binds CUDA 13.0 driver entry points.
/// Keep the two in step.
pub const REQUIRED_DRIVER_API: i32 = 13000;

/// A usable driver with at least one device.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct DeviceInfo {
    /// The library that was loaded (as given to the loader).
    pub library: PathBuf,
    /// `cuDriverGetVersion`: 1000 * major + 10 * minor (13000 = CUDA 13.0).
    pub driver_api: i32,
    /// `cuDeviceGetCount`, at least 1.
    pub devices: u32,
    /// The name of device 0, when the driver could tell.
    pub name: Option<String>,
}

impl fmt::Display for DeviceInfo {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let name = self.name.as_deref().unwrap_or("CUDA device");
        write!(
            f,
            "{name} ({} device{}), driver API {} (CUDA {}), {}",
            self.devices,
            if self.devices == 1 { "" } else { "s" },
            self.driver_api,
            cuda_version(self.driver_api),
            self.library.display()
        )
    }
}

/// Why there is no usable CUDA device here. Every variant's message is a
/// complete sentence fit for `gpu-test: skipped: <message>`.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum NoDevice {
    /// No driver library could be loaded: the NVIDIA driver is not installed
    /// (or not on the loader path).
    #[error(
        "no CUDA driver: cannot load {} (the NVIDIA driver is not installed or not on the loader path; \
         set {LIBCUDA_ENV} to its path if it is elsewhere): {detail}",
        display_list(.tried)
    )]
    NoDriver {
        /// The libraries tried, in order.
        tried: Vec<PathBuf>,
        /// The loader's message for the last one.
        detail: String,
    },
    /// A library loaded but lacks a driver entry point: not a CUDA driver.
    #[error("{}: not a usable CUDA driver library: it has no `{symbol}` ({detail})", .library.display())]
    NotADriver {
        /// The library that loaded.
        library: PathBuf,
        /// The missing entry point.
        symbol: &'static str,
        /// The loader's message.
        detail: String,
    },
    /// The driver is older than the CUDA version the backend is built for.
    #[error(
        "the CUDA driver is too old: it supports CUDA {} (driver API {found}), but the backend is built for \
         CUDA {} (cudarc feature cuda-{required}) and needs driver API >= {required}; update the NVIDIA driver",
        cuda_version(*.found),
        cuda_version(*.required)
    )]
    DriverTooOld {
        /// What `cuDriverGetVersion` reported.
        found: i32,
        /// [`REQUIRED_DRIVER_API`].
        required: i32,
    },
    /// A driver call failed (`cuDriverGetVersion`, `cuInit` or `cuDeviceGetCount`).
    #[error("{call} failed with {} ({code}): {}", error_name(*.code).0, error_name(*.code).1)]
    DriverCall {
        /// The entry point that failed.
        call: &'static str,
        /// Its `CUresult`.
        code: i32,
    },
    /// The driver works but sees no device.
    #[error("the CUDA driver is installed (driver API {driver_api}) but reports zero devices")]
    ZeroDevices {
        /// What `cuDriverGetVersion` reported.
        driver_api: i32,
    },
    /// No CUDA driver exists for this platform.
    #[error("CUDA is not available on this platform ({0})")]
    Unsupported(&'static str),
    /// The probe (run in a child process) crashed inside the driver library.
    #[error(
        "the CUDA driver probe crashed: {how} while loading the driver library or calling cuDriverGetVersion/cuInit/cuDeviceGetCount \
         (a broken or mismatched NVIDIA driver; try `nvidia-smi`)"
    )]
    ProbeCrashed {
        /// How it ended.
        how: String,
    },
    /// The probe did not answer within its time limit (a driver call hangs).
    #[error(
        "the CUDA driver probe did not answer within {} s: a driver call (cuInit?) hangs; it was killed \
         (a wedged GPU or driver; try `nvidia-smi`; the limit is set by RTX_GPU_TEST_PROBE_TIMEOUT)",
        .limit.as_secs_f64()
    )]
    ProbeHung {
        /// The time limit.
        limit: std::time::Duration,
    },
    /// What the probe in the child process reported.
    #[error("{0}")]
    Reported(String),
}

fn display_list(paths: &[PathBuf]) -> String {
    paths
        .iter()
        .map(|p| p.display().to_string())
        .collect::<Vec<_>>()
        .join(" or ")
}

/// `13000` -> `"13.0"`, `12040` -> `"12.4"`.
pub fn cuda_version(driver_api: i32) -> String {
    format!("{}.{}", driver_api / 1000, (driver_api % 1000) / 10)
}

/// The name and meaning of a `CUresult` the probe may meet.
pub fn error_name(code: i32) -> (&'static str, &'static str) {
    match code {
        1 => ("CUDA_ERROR_INVALID_VALUE", "an argument was invalid"),
        2 => ("CUDA_ERROR_OUT_OF_MEMORY", "out of memory"),
        3 => (
            "CUDA_ERROR_NOT_INITIALIZED",
            "the driver is not initialized",
        ),
        4 => ("CUDA_ERROR_DEINITIALIZED", "the driver is shutting down"),
        34 => (
            "CUDA_ERROR_STUB_LIBRARY",
            "the loaded libcuda is the toolkit's stub, not the real driver",
        ),
        35 => (
            "CUDA_ERROR_INSUFFICIENT_DRIVER",
            "the installed driver is older than the CUDA runtime",
        ),
        46 => (
            "CUDA_ERROR_DEVICE_UNAVAILABLE",
            "the devices are busy or unavailable (compute-exclusive mode?)",
        ),
        100 => ("CUDA_ERROR_NO_DEVICE", "no CUDA-capable device is detected"),
        101 => ("CUDA_ERROR_INVALID_DEVICE", "invalid device ordinal"),
        304 => (
            "CUDA_ERROR_OPERATING_SYSTEM",
            "an operating system call failed",
        ),
        803 => (
            "CUDA_ERROR_SYSTEM_DRIVER_MISMATCH",
            "the driver library and the kernel module versions differ",
        ),
        804 => (
            "CUDA_ERROR_COMPAT_NOT_SUPPORTED_ON_DEVICE",
            "the forward-compatibility driver does not support this device",
        ),
        999 => ("CUDA_ERROR_UNKNOWN", "unknown error"),
        _ => (
            "CUDA error",
            "see the CUresult list in the CUDA driver API documentation",
        ),
    }
}

/// The driver libraries tried when [`LIBCUDA_ENV`] is unset, in order.
pub fn default_libraries() -> Vec<PathBuf> {
    if cfg!(windows) {
        vec![PathBuf::from("nvcuda.dll")]
    } else if cfg!(target_os = "macos") {
        Vec::new()
    } else {
        vec![PathBuf::from("libcuda.so.1"), PathBuf::from("libcuda.so")]
    }
}

/// Probes for a usable CUDA driver and device: the library named by
/// [`LIBCUDA_ENV`] if set, else [`default_libraries`].
///
/// # Errors
/// The reason there is no usable device, as a [`NoDevice`]. Never panics.
pub fn probe() -> Result<DeviceInfo, NoDevice> {
    match std::env::var_os(LIBCUDA_ENV).filter(|v| !v.is_empty()) {
        Some(path) => probe_libraries(&[PathBuf::from(path)]),
        None => probe_libraries(&default_libraries()),
    }
}

/// Probes with the first of `candidates` that loads (later ones are only tried
/// when earlier ones fail to load).
///
/// # Errors
/// As [`probe`].
pub fn probe_libraries(candidates: &[PathBuf]) -> Result<DeviceInfo, NoDevice> {
    if candidates.is_empty() {
        return Err(NoDevice::Unsupported(std::env::consts::OS));
    }
    let mut detail = String::new();
    for path in candidates {
        // SAFETY: loading the CUDA driver runs its library initialisers, which
        // are written to be loaded at run time (cudarc's `dynamic-loading` does
        // the same). A library the user names via RTX_GPU_TEST_LIBCUDA is
        // trusted like any library on the loader path.
        match unsafe { libloading::Library::new(path) } {
            Ok(lib) => {
                let result = query(&lib, path);
                // Never unload a driver: cuInit may have started threads that
                // run its code. The process is short-lived; keeping it mapped
                // costs nothing.
                std::mem::forget(lib);
                return result;
            }
            Err(e) => detail = loader_message(&e),
        }
    }
    Err(NoDevice::NoDriver {
        tried: candidates.to_vec(),
        detail,
    })
}

type CuInit = unsafe extern "C" fn(c_uint) -> c_int;
type CuGetInt = unsafe extern "C" fn(*mut c_int) -> c_int;
type CuDeviceGet = unsafe extern "C" fn(*mut c_int, c_int) -> c_int;
type CuDeviceGetName = unsafe extern "C" fn(*mut c_char, c_int, c_int) -> c_int;

fn symbol<'l, T>(
    lib: &'l libloading::Library,
    path: &Path,
    name: &'static str,
) -> Result<libloading::Symbol<'l, T>, NoDevice> {
    // SAFETY: every `T` used with this helper is the documented C signature of
    // the CUDA driver entry point `name` (cuda.h), so calling it is sound.
    unsafe { lib.get::<T>(name.as_bytes()) }.map_err(|e| NoDevice::NotADriver {
        library: path.to_path_buf(),
        symbol: name,
        detail: loader_message(&e),
    })
}

/// libloading's error with its cause (`dlopen failed` alone says nothing).
fn loader_message(e: &libloading::Error) -> String {
    match std::error::Error::source(e) {
        Some(src) => src.to_string(),
        None => e.to_string(),
    }
}

fn query(lib: &libloading::Library, path: &Path) -> Result<DeviceInfo, NoDevice> {
    let get_version = symbol::<CuGetInt>(lib, path, "cuDriverGetVersion")?;
    let init = symbol::<CuInit>(lib, path, "cuInit")?;
    let get_count = symbol::<CuGetInt>(lib, path, "cuDeviceGetCount")?;

    // cuDriverGetVersion works before cuInit, so a too-old driver is named as
    // such even when it would also fail to initialise.
    let mut driver_api: c_int = 0;
    // SAFETY: the documented signature; the out-pointer is a live local.
    let rc = unsafe { get_version(&raw mut driver_api) };
    check("cuDriverGetVersion", rc)?;
    if driver_api < REQUIRED_DRIVER_API {
        return Err(NoDevice::DriverTooOld {
            found: driver_api,
            required: REQUIRED_DRIVER_API,
        });
    }
    // SAFETY: the documented signature; flags must be 0.
    check("cuInit", unsafe { init(0) })?;
    let mut count: c_int = 0;
    // SAFETY: the documented signature; the out-pointer is a live local.
    check("cuDeviceGetCount", unsafe { get_count(&raw mut count) })?;
    let devices = u32::try_from(count).unwrap_or(0);
    if devices == 0 {
        return Err(NoDevice::ZeroDevices { driver_api });
    }
    Ok(DeviceInfo {
        library: path.to_path_buf(),
        driver_api,
        devices,
        name: device_name(lib, path),
    })
}

/// The name of device 0, best effort (older or fake drivers may lack it).
fn device_name(lib: &libloading::Library, path: &Path) -> Option<String> {
    let device_get = symbol::<CuDeviceGet>(lib, path, "cuDeviceGet").ok()?;
    let get_name = symbol::<CuDeviceGetName>(lib, path, "cuDeviceGetName").ok()?;
    let mut dev: c_int = 0;
    // SAFETY: the documented signature; the out-pointer is a live local.
    if unsafe { device_get(&raw mut dev, 0) } != 0 {
        return None;
    }
    let mut buf = [0 as c_char; 256];
    // SAFETY: the documented signature; the driver writes at most `len` bytes
    // (NUL-terminated) into the buffer.
    if unsafe { get_name(buf.as_mut_ptr(), buf.len() as c_int, dev) } != 0 {
        return None;
    }
    buf[buf.len() - 1] = 0; // guarantee termination whatever the driver did
    // SAFETY: `buf` is NUL-terminated (last byte forced to 0 above).
    let name = unsafe { CStr::from_ptr(buf.as_ptr()) }
        .to_string_lossy()
        .trim()
        .to_string();
    (!name.is_empty()).then_some(name)
}

fn check(call: &'static str, code: c_int) -> Result<(), NoDevice> {
    if code == 0 {
        Ok(())
    } else {
        Err(NoDevice::DriverCall { call, code })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn missing_library_is_no_driver() {
        let e = probe_libraries(&[PathBuf::from("/nonexistent/libcuda.so.1")]).unwrap_err();
        assert!(matches!(e, NoDevice::NoDriver { .. }), "{e:?}");
        let msg = e.to_string();
        assert!(
            msg.starts_with("no CUDA driver: cannot load /nonexistent/libcuda.so.1"),
            "{msg}"
        );
        assert!(msg.contains("not installed"), "{msg}");
    }

    #[test]
    fn every_candidate_is_named() {
        let e = probe_libraries(&[PathBuf::from("/nope/a.so"), PathBuf::from("/nope/b.so")])
            .unwrap_err();
        assert!(e.to_string().contains("/nope/a.so or /nope/b.so"), "{e}");
    }

    #[test]
    fn no_candidates_is_unsupported() {
        assert!(matches!(
            probe_libraries(&[]),
            Err(NoDevice::Unsupported(_))
        ));
    }

    #[test]
    fn a_library_that_is_not_a_driver_is_named() {
        // libc loads everywhere on Linux and has no cuInit.
        if !cfg!(target_os = "linux") {
            return;
        }
        let e = probe_libraries(&[PathBuf::from("libc.so.6")]).unwrap_err();
        assert!(
            matches!(
                e,
                NoDevice::NotADriver {
                    symbol: "cuDriverGetVersion",
                    ..
                }
            ),
            "{e:?}"
        );
    }

    #[test]
    fn messages_are_plain_words() {
        let old = NoDevice::DriverTooOld {
            found: 12040,
            required: 13000,
        }
        .to_string();
        assert!(
            old.contains("too old") && old.contains("CUDA 12.4") && old.contains("CUDA 13.0"),
            "{old}"
        );
        assert!(old.contains(">= 13000"), "{old}");
        let init = NoDevice::DriverCall {
            call: "cuInit",
            code: 100,
        }
        .to_string();
        assert_eq!(
            init,
            "cuInit failed with CUDA_ERROR_NO_DEVICE (100): no CUDA-capable device is detected"
        );
        let zero = NoDevice::ZeroDevices { driver_api: 13000 }.to_string();
        assert!(zero.contains("zero devices"), "{zero}");
    }

    #[test]
    fn versions_print_as_cuda_releases() {
        assert_eq!(cuda_version(13000), "13.0");
        assert_eq!(cuda_version(12040), "12.4");
        assert_eq!(cuda_version(REQUIRED_DRIVER_API), "13.0");
    }

    #[test]
    fn required_version_matches_the_cudarc_feature() {
        // The workspace manifest selects cudarc's cuda-NNNNN feature; the probe's
        // floor must be that same version.
        // the checkout the test runs in (cargo and nextest set it at run time)
        let root = std::env::var_os("CARGO_MANIFEST_DIR")
            .map_or_else(
                || env!("CARGO_MANIFEST_DIR").into(),
                std::path::PathBuf::from,
            )
            .join("..")
            .join("Cargo.toml");
        let text = std::fs::read_to_string(&root).unwrap();
        let line = text
            .lines()
            .find(|l| l.trim_start().starts_with("cudarc ="))
            .expect("cudarc in [workspace.dependencies]");
        let want = format!("\"cuda-{REQUIRED_DRIVER_API}\"");
        assert!(
            line.contains(&want),
            "{}: cudarc's features do not include {want}; update REQUIRED_DRIVER_API in xtask/src/gpu_test/probe.rs \
             to the cuda-NNNNN feature used there",
            root.display()
        );
    }
}
