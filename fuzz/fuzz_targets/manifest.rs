//! libFuzzer entry point of the `manifest` target: `once_fuzz::manifest` (its properties are
//! documented there and in docs/fuzzing.md).

#![no_main]

libfuzzer_sys::fuzz_target!(|data: &[u8]| once_fuzz::manifest(data));
