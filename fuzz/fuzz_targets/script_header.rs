//! libFuzzer entry point of the `script_header` target: `once_fuzz::script_header` (its properties are
//! documented there and in docs/fuzzing.md).

#![no_main]

libfuzzer_sys::fuzz_target!(|data: &[u8]| once_fuzz::script_header(data));
