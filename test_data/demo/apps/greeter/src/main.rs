//! `greeter [--shout] [NAME…]`: prints a greeting for the given names; `--shout`
//! upper-cases it with the C library `libs/shout`.

use std::ffi::{c_char, CStr, CString};

extern "C" {
    /// Declared in `libs/shout/shout.h`.
    fn shout(buf: *mut c_char, size: usize, text: *const c_char) -> usize;
}

/// Upper-cases `text` through the C library.
fn shouted(text: &str) -> String {
    let text = CString::new(text).expect("a greeting has no NUL byte");
    let mut buf = vec![0u8; text.as_bytes().len() + 1];
    // SAFETY: `buf` is writable for `buf.len()` bytes and `text` is NUL-terminated.
    unsafe { shout(buf.as_mut_ptr().cast(), buf.len(), text.as_ptr()) };
    let shouted = CStr::from_bytes_until_nul(&buf).expect("shout terminates its output");
    shouted.to_string_lossy().into_owned()
}

fn main() {
    let args: Vec<String> = std::env::args().skip(1).collect();
    let loud = args.iter().any(|a| a == "--shout");
    let names: Vec<&str> = args
        .iter()
        .map(String::as_str)
        .filter(|a| *a != "world" && *a != "--shout")
        .collect();
    let greeting = greeting::greet(&names);
    if loud {
        println!("{}", shouted(&greeting));
    } else {
        println!("{greeting}");
    }
}
