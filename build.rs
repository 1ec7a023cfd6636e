//! Passes PyO3's interpreter cfgs (`Py_GIL_DISABLED` on free-threaded Python) to the crate, so that
//! rust/python/ids.rs compiles its GIL-only fast paths out of free-threaded builds.
fn main() {
    #[cfg(feature = "python")]
    pyo3_build_config::use_pyo3_cfgs();
}
