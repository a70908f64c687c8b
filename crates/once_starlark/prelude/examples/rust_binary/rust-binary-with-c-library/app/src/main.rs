//! Limits the first argument to a percentage with the C library's `clamp_int`.

use std::ffi::c_int;

unsafe extern "C" {
    /// Declared in `native/clamp/clamp.h`.
    fn clamp_int(value: c_int, low: c_int, high: c_int) -> c_int;
}

fn main() {
    let value: c_int = std::env::args()
        .nth(1)
        .and_then(|arg| arg.parse().ok())
        .unwrap_or(0);
    // SAFETY: `clamp_int` only reads its integer arguments.
    let percent = unsafe { clamp_int(value, 0, 100) };
    println!("{percent}%");
}
